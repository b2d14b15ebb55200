package s3

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// STS's two calls a profile can need, AssumeRoleWithWebIdentity (not
// signed: the token is the proof) and AssumeRole (signed with the source
// credentials), in STS's query protocol
// (docs.aws.amazon.com/STS/latest/APIReference/API_AssumeRole.html).

// httpDoer sends a request: the client that follows no redirect.
type httpDoer interface {
	Do(*http.Request) (*http.Response, error)
}

// maxSTSResponse bounds an answer of STS or SSO: a few hundred bytes.
const maxSTSResponse = 64 << 10

// stsClient calls STS in the configured region (us-east-1's regional
// endpoint without one), or at AWS_ENDPOINT_URL_STS.
type stsClient struct {
	c  *awsConfig
	hc httpDoer
}

func (s stsClient) region() string {
	if r := s.c.region(); r != "" {
		return r
	}
	return "us-east-1"
}

func (s stsClient) endpoint() string {
	if v := s.c.getenv("AWS_ENDPOINT_URL_STS"); v != "" {
		return v
	}
	return "https://sts." + s.region() + ".amazonaws.com/"
}

// call posts the form, signed with creds unless they are nil, and reads
// the credentials of the answer.
func (s stsClient) call(ctx context.Context, form url.Values, creds *aws.Credentials) (aws.Credentials, error) {
	form.Set("Version", "2011-06-15")
	body := form.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.endpoint(), strings.NewReader(body))
	if err != nil {
		return aws.Credentials{}, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
	if creds != nil {
		sum := sha256.Sum256([]byte(body))
		if err := v4.NewSigner().SignHTTP(ctx, *creds, req, hex.EncodeToString(sum[:]), "sts", s.region(), time.Now()); err != nil {
			return aws.Credentials{}, err
		}
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		return aws.Credentials{}, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxSTSResponse))
	if err != nil {
		return aws.Credentials{}, err
	}
	return parseSTSResponse(resp.StatusCode, data)
}

// parseSTSResponse reads the Credentials of an …Result, or the Error.
func parseSTSResponse(status int, data []byte) (aws.Credentials, error) {
	var r struct {
		Results []struct {
			Credentials *struct {
				AccessKeyId, SecretAccessKey, SessionToken string
				Expiration                                 time.Time
			}
		} `xml:",any"`
		Error struct{ Code, Message string }
	}
	err := xml.Unmarshal(data, &r)
	if status != http.StatusOK {
		if err == nil && r.Error.Code != "" {
			return aws.Credentials{}, fmt.Errorf("STS: %s: %s", r.Error.Code, r.Error.Message)
		}
		return aws.Credentials{}, fmt.Errorf("STS: HTTP %d", status)
	}
	if err != nil {
		return aws.Credentials{}, fmt.Errorf("STS: %v", err)
	}
	for _, res := range r.Results {
		if c := res.Credentials; c != nil && c.AccessKeyId != "" && c.SecretAccessKey != "" {
			return aws.Credentials{AccessKeyID: c.AccessKeyId, SecretAccessKey: c.SecretAccessKey,
				SessionToken: c.SessionToken, CanExpire: true, Expires: c.Expiration}, nil
		}
	}
	return aws.Credentials{}, fmt.Errorf("STS: no credentials in the answer")
}

// sessionName is the role session's name: the one configured, or one of
// ckptcheck's, unique to the second.
func sessionName(configured string) string {
	if configured != "" {
		return configured
	}
	return "ckptcheck-" + strconv.FormatInt(time.Now().Unix(), 10)
}

// webIdentity assumes a role with the token of a file (EKS's IRSA, CI
// OIDC), read again at each refresh: the file is rotated.
type webIdentity struct {
	sts                      stsClient
	tokenFile, role, session string
}

func (w *webIdentity) Retrieve(ctx context.Context) (aws.Credentials, error) {
	if w.role == "" {
		return aws.Credentials{}, fmt.Errorf("web identity token file %s: no role ARN (AWS_ROLE_ARN or role_arn)", w.tokenFile)
	}
	token, err := readSmallFile(w.tokenFile)
	if err != nil {
		return aws.Credentials{}, fmt.Errorf("web identity token: %v", err)
	}
	return w.sts.call(ctx, url.Values{"Action": {"AssumeRoleWithWebIdentity"}, "RoleArn": {w.role},
		"RoleSessionName": {sessionName(w.session)}, "WebIdentityToken": {strings.TrimSpace(string(token))}}, nil)
}

// assumeRole assumes a profile's role_arn with its source's credentials.
type assumeRole struct {
	sts                       stsClient
	source                    aws.CredentialsProvider
	role, session, externalID string
}

func (a *assumeRole) Retrieve(ctx context.Context) (aws.Credentials, error) {
	src, err := a.source.Retrieve(ctx)
	if err != nil {
		return aws.Credentials{}, err
	}
	form := url.Values{"Action": {"AssumeRole"}, "RoleArn": {a.role}, "RoleSessionName": {sessionName(a.session)}}
	if a.externalID != "" {
		form.Set("ExternalId", a.externalID)
	}
	return a.sts.call(ctx, form, &src)
}
