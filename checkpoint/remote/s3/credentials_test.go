package s3

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// fakeEnv is an environment for loadAWSConfig: HOME points at a temporary
// directory (the SSO cache), and the shared files are the ones written.
func fakeEnv(t *testing.T, vars map[string]string, config, creds string) func(string) string {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	env := map[string]string{"AWS_CONFIG_FILE": write("config", config), "AWS_SHARED_CREDENTIALS_FILE": write("credentials", creds),
		"AWS_EC2_METADATA_DISABLED": "true"}
	for k, v := range vars {
		env[k] = v
	}
	return func(k string) string { return env[k] }
}

func TestParseShared(t *testing.T) {
	config := `# comment
[default]
region = eu-west-1
[profile dev]
region=us-west-2 # trailing comment
s3 =
  addressing_style = path
role_arn = arn:aws:iam::1:role/r
[sso-session corp]
sso_region = eu-central-1
[not-a-profile]
region = nowhere
`
	creds := "[default]\naws_access_key_id = AKID\naws_secret_access_key = SECRET\n[dev]\nregion = ignored-by-config\n"
	profiles, sessions := map[string]profile{}, map[string]profile{}
	parseShared([]byte(creds), false, profiles, sessions)
	parseShared([]byte(config), true, profiles, sessions)
	for _, c := range []struct{ profile, key, want string }{
		{"default", "region", "eu-west-1"},
		{"default", "aws_access_key_id", "AKID"},
		{"dev", "region", "us-west-2"},
		{"dev", "role_arn", "arn:aws:iam::1:role/r"},
		{"dev", "addressing_style", ""},
		{"not-a-profile", "region", ""},
	} {
		if got := profiles[c.profile][c.key]; got != c.want {
			t.Errorf("profile %s %s = %q, want %q", c.profile, c.key, got, c.want)
		}
	}
	if sessions["corp"]["sso_region"] != "eu-central-1" {
		t.Errorf("sso-session corp = %v", sessions["corp"])
	}
}

func TestConfigPrecedence(t *testing.T) {
	for _, c := range []struct {
		name           string
		vars           map[string]string
		region, endpnt string
	}{
		{"profile", nil, "eu-west-1", "http://profile"},
		{"AWS_DEFAULT_REGION", map[string]string{"AWS_DEFAULT_REGION": "ap-south-1"}, "ap-south-1", "http://profile"},
		{"AWS_REGION first", map[string]string{"AWS_REGION": "us-east-2", "AWS_DEFAULT_REGION": "ap-south-1"}, "us-east-2", "http://profile"},
		{"AWS_ENDPOINT_URL", map[string]string{"AWS_ENDPOINT_URL": "http://all"}, "eu-west-1", "http://all"},
		{"AWS_ENDPOINT_URL_S3 first", map[string]string{"AWS_ENDPOINT_URL": "http://all", "AWS_ENDPOINT_URL_S3": "http://s3"}, "eu-west-1", "http://s3"},
		{"ignored", map[string]string{"AWS_ENDPOINT_URL": "http://all", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": "true"}, "eu-west-1", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := loadAWSConfig(fakeEnv(t, c.vars, "[default]\nregion = eu-west-1\nendpoint_url = http://profile\n", ""))
			if err != nil {
				t.Fatal(err)
			}
			if cfg.region() != c.region || cfg.endpoint() != c.endpnt {
				t.Errorf("region %q endpoint %q, want %q %q", cfg.region(), cfg.endpoint(), c.region, c.endpnt)
			}
		})
	}
}

// fakeAWS answers STS's query calls and SSO's GetRoleCredentials, and
// records what it was sent.
type fakeAWS struct {
	got    []*http.Request
	bodies []string
}

func (f *fakeAWS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.got, f.bodies = append(f.got, r), append(f.bodies, string(body))
	exp := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	switch {
	case r.URL.Path == "/federation/credentials":
		if r.Header.Get("x-amz-sso_bearer_token") != "sso-token" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		fmt.Fprintf(w, `{"roleCredentials":{"accessKeyId":"SSOKEY","secretAccessKey":"SSOSECRET","sessionToken":"T","expiration":%d}}`,
			time.Now().Add(time.Hour).UnixMilli())
	case strings.Contains(string(body), "Action=AssumeRoleWithWebIdentity"):
		if !strings.Contains(string(body), "WebIdentityToken=oidc-token") {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `<ErrorResponse><Error><Code>InvalidIdentityToken</Code><Message>bad token</Message></Error></ErrorResponse>`)
			return
		}
		fmt.Fprintf(w, `<AssumeRoleWithWebIdentityResponse><AssumeRoleWithWebIdentityResult><Credentials>`+
			`<AccessKeyId>WEBKEY</AccessKeyId><SecretAccessKey>WEBSECRET</SecretAccessKey><SessionToken>T</SessionToken>`+
			`<Expiration>%s</Expiration></Credentials></AssumeRoleWithWebIdentityResult></AssumeRoleWithWebIdentityResponse>`, exp)
	case strings.Contains(string(body), "Action=AssumeRole"):
		if !strings.Contains(r.Header.Get("Authorization"), "Credential=SRCKEY/") {
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprint(w, `<ErrorResponse><Error><Code>SignatureDoesNotMatch</Code><Message>unsigned</Message></Error></ErrorResponse>`)
			return
		}
		fmt.Fprintf(w, `<AssumeRoleResponse><AssumeRoleResult><Credentials><AccessKeyId>ROLEKEY</AccessKeyId>`+
			`<SecretAccessKey>ROLESECRET</SecretAccessKey><SessionToken>T</SessionToken><Expiration>%s</Expiration>`+
			`</Credentials></AssumeRoleResult></AssumeRoleResponse>`, exp)
	case r.URL.Path == "/container":
		if r.Header.Get("Authorization") != "container-token" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		fmt.Fprintf(w, `{"AccessKeyId":"CTRKEY","SecretAccessKey":"CTRSECRET","Token":"T","Expiration":%q}`, exp)
	default:
		w.WriteHeader(http.StatusNotFound)
	}
}

func TestCredentialChain(t *testing.T) {
	fake := &fakeAWS{}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("oidc-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sts := map[string]string{"AWS_ENDPOINT_URL_STS": srv.URL}
	with := func(m map[string]string, kv ...string) map[string]string {
		out := map[string]string{}
		for k, v := range m {
			out[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	creds := "[default]\naws_access_key_id = DEFKEY\naws_secret_access_key = DEFSECRET\n" +
		"[src]\naws_access_key_id = SRCKEY\naws_secret_access_key = SRCSECRET\n"
	config := "[profile role]\nrole_arn = arn:aws:iam::1:role/r\nsource_profile = src\n" +
		"[profile web]\nrole_arn = arn:aws:iam::1:role/w\nweb_identity_token_file = " + tokenFile + "\n" +
		"[profile sso]\nsso_session = corp\nsso_account_id = 1\nsso_role_name = reader\n" +
		"[sso-session corp]\nsso_region = eu-west-1\nsso_start_url = https://corp.awsapps.com/start\n" +
		"[profile proc]\ncredential_process = echo '{\"Version\":1,\"AccessKeyId\":\"PROCKEY\",\"SecretAccessKey\":\"PROCSECRET\"}'\n" +
		"[profile loop]\nrole_arn = arn:aws:iam::1:role/l\nsource_profile = loop2\n" +
		"[profile loop2]\nrole_arn = arn:aws:iam::1:role/l\nsource_profile = loop\n" +
		"[profile login]\nlogin_session = arn:aws:iam::1:user/u\n"
	for _, c := range []struct {
		name    string
		vars    map[string]string
		wantKey string
		wantErr string
	}{
		{"default profile", nil, "DEFKEY", ""},
		{"environment keys", map[string]string{"AWS_ACCESS_KEY_ID": "ENVKEY", "AWS_SECRET_ACCESS_KEY": "S"}, "ENVKEY", ""},
		{"named profile over environment", map[string]string{"AWS_PROFILE": "src", "AWS_ACCESS_KEY_ID": "ENVKEY", "AWS_SECRET_ACCESS_KEY": "S"}, "SRCKEY", ""},
		{"assume role", with(sts, "AWS_PROFILE", "role"), "ROLEKEY", ""},
		{"web identity profile", with(sts, "AWS_PROFILE", "web"), "WEBKEY", ""},
		{"web identity environment", with(sts, "AWS_WEB_IDENTITY_TOKEN_FILE", tokenFile, "AWS_ROLE_ARN", "arn:aws:iam::1:role/w"), "WEBKEY", ""},
		{"sso", map[string]string{"AWS_PROFILE": "sso", "AWS_ENDPOINT_URL_SSO": srv.URL}, "SSOKEY", ""},
		{"credential_process", map[string]string{"AWS_PROFILE": "proc"}, "PROCKEY", ""},
		{"container", map[string]string{"AWS_CONTAINER_CREDENTIALS_FULL_URI": srv.URL + "/container",
			"AWS_CONTAINER_AUTHORIZATION_TOKEN": "container-token"}, "CTRKEY", ""},
		{"missing profile", map[string]string{"AWS_PROFILE": "nope"}, "", "no profile \"nope\""},
		{"source_profile loop", map[string]string{"AWS_PROFILE": "loop"}, "", "source_profile chain longer"},
		{"aws login", map[string]string{"AWS_PROFILE": "login"}, "", "aws login"},
		{"container not allowed", map[string]string{"AWS_CONTAINER_CREDENTIALS_FULL_URI": "http://192.0.2.1/creds"}, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			credsFile := creds
			if strings.HasPrefix(c.name, "container") {
				credsFile = ""
			}
			env := fakeEnv(t, c.vars, config, credsFile)
			if c.name == "sso" {
				sum := sha1.Sum([]byte("corp"))
				dir := filepath.Join(os.Getenv("HOME"), ".aws", "sso", "cache")
				os.MkdirAll(dir, 0o700)
				tok := fmt.Sprintf(`{"accessToken":"sso-token","expiresAt":%q}`, time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
				if err := os.WriteFile(filepath.Join(dir, hex.EncodeToString(sum[:])+".json"), []byte(tok), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			cfg, err := loadAWSConfig(env)
			if err != nil {
				t.Fatal(err)
			}
			p, err := credentialChain(cfg, srv.Client())
			if err == nil {
				var v aws.Credentials
				v, err = p.Retrieve(context.Background())
				if err == nil && v.AccessKeyID != c.wantKey {
					t.Errorf("access key %q, want %q", v.AccessKeyID, c.wantKey)
				}
			}
			switch {
			case c.name == "container not allowed":
				if err == nil || !strings.Contains(err.Error(), "plain http only") {
					t.Errorf("err = %v, want a refusal of the host", err)
				}
			case c.wantErr == "" && err != nil:
				t.Errorf("err = %v", err)
			case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
				t.Errorf("err = %v, want %q", err, c.wantErr)
			}
		})
	}
}
