package s3

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// IAM Identity Center (SSO) profiles: the token `aws sso login` cached
// is traded for the role's credentials, as the SDK's ssocreds does
// (aws/aws-sdk-go-v2 credentials/ssocreds, v1.21.0: the cache file is
// the SHA-1 of the session name, or of the start URL for a legacy
// profile; GetRoleCredentials is GET /federation/credentials). An
// expired token is not refreshed here: `aws sso login` again.

type ssoProvider struct {
	hc                        httpDoer
	profile, cacheFile        string
	region, account, roleName string
	endpoint                  string
}

func newSSOProvider(c *awsConfig, hc httpDoer, name string, pr profile) (*ssoProvider, error) {
	key, region := pr["sso_start_url"], pr["sso_region"]
	if s := pr["sso_session"]; s != "" {
		sess := c.ssoSess[s]
		if sess == nil {
			return nil, fmt.Errorf("AWS configuration: profile %q: no [sso-session %s] section", name, s)
		}
		key, region = s, sess["sso_region"]
	}
	if key == "" || region == "" || pr["sso_account_id"] == "" || pr["sso_role_name"] == "" {
		return nil, fmt.Errorf("AWS configuration: profile %q: SSO needs sso_region, sso_account_id and sso_role_name "+
			"(and sso_session or sso_start_url)", name)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return nil, fmt.Errorf("AWS configuration: profile %q: the SSO token cache: %v", name, err)
	}
	sum := sha1.Sum([]byte(key))
	p := &ssoProvider{hc: hc, profile: name, region: region, account: pr["sso_account_id"], roleName: pr["sso_role_name"],
		cacheFile: filepath.Join(home, ".aws", "sso", "cache", hex.EncodeToString(sum[:])+".json"),
		endpoint:  "https://portal.sso." + region + ".amazonaws.com"}
	if v := c.getenv("AWS_ENDPOINT_URL_SSO"); v != "" {
		p.endpoint = v
	}
	return p, nil
}

func (p *ssoProvider) Retrieve(ctx context.Context) (aws.Credentials, error) {
	relogin := fmt.Sprintf("run `aws sso login --profile %s`", p.profile)
	data, err := readSmallFile(p.cacheFile)
	if err != nil {
		return aws.Credentials{}, fmt.Errorf("SSO profile %q: no cached token (%v): %s", p.profile, err, relogin)
	}
	var tok struct {
		AccessToken string `json:"accessToken"`
		ExpiresAt   string `json:"expiresAt"`
	}
	if err := json.Unmarshal(data, &tok); err != nil || tok.AccessToken == "" {
		return aws.Credentials{}, fmt.Errorf("SSO profile %q: unreadable cached token %s: %s", p.profile, p.cacheFile, relogin)
	}
	if exp, err := time.Parse(time.RFC3339, tok.ExpiresAt); err != nil || time.Now().After(exp) {
		return aws.Credentials{}, fmt.Errorf("SSO profile %q: the cached token has expired: %s", p.profile, relogin)
	}
	q := url.Values{"account_id": {p.account}, "role_name": {p.roleName}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.endpoint+"/federation/credentials?"+q.Encode(), nil)
	if err != nil {
		return aws.Credentials{}, err
	}
	req.Header.Set("x-amz-sso_bearer_token", tok.AccessToken)
	resp, err := p.hc.Do(req)
	if err != nil {
		return aws.Credentials{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxSTSResponse))
	if err != nil {
		return aws.Credentials{}, err
	}
	if resp.StatusCode != http.StatusOK {
		return aws.Credentials{}, fmt.Errorf("SSO profile %q: HTTP %d: %s", p.profile, resp.StatusCode, relogin)
	}
	var r struct {
		RoleCredentials struct {
			AccessKeyID     string `json:"accessKeyId"`
			SecretAccessKey string `json:"secretAccessKey"`
			SessionToken    string `json:"sessionToken"`
			Expiration      int64  `json:"expiration"` // milliseconds since the epoch
		} `json:"roleCredentials"`
	}
	if err := json.Unmarshal(body, &r); err != nil || r.RoleCredentials.AccessKeyID == "" {
		return aws.Credentials{}, fmt.Errorf("SSO profile %q: no credentials in the answer", p.profile)
	}
	rc := r.RoleCredentials
	return aws.Credentials{AccessKeyID: rc.AccessKeyID, SecretAccessKey: rc.SecretAccessKey, SessionToken: rc.SessionToken,
		CanExpire: true, Expires: time.UnixMilli(rc.Expiration)}, nil
}
