package s3

import (
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/credentials/ec2rolecreds"
	"github.com/aws/aws-sdk-go-v2/credentials/endpointcreds"
	"github.com/aws/aws-sdk-go-v2/credentials/processcreds"
)

// The credential chain, in the order of the SDK's config package
// (aws/aws-sdk-go-v2 config/resolve_credentials.go, v1.33.18): a profile
// named by AWS_PROFILE; the environment's keys; the environment's web
// identity; then the default profile, whose last resorts are the
// container's and the instance's roles. The SDK's providers are used
// where they are light (static, process, container, instance); STS and
// SSO are called here (sts.go, sso.go), see awsconfig.go for why.

// ecsEndpoint is where AWS_CONTAINER_CREDENTIALS_RELATIVE_URI points.
var ecsEndpoint = "http://169.254.170.2"

// containerHosts are the hosts a plain-http AWS_CONTAINER_CREDENTIALS_FULL_URI
// may name besides loopback: ECS's and EKS Pod Identity's agents.
var containerHosts = []net.IP{net.IPv4(169, 254, 170, 2), net.IPv4(169, 254, 170, 23), net.ParseIP("fd00:ec2::23")}

// credentialChain resolves the provider the configuration names, cached.
func credentialChain(c *awsConfig, hc httpDoer) (aws.CredentialsProvider, error) {
	var p aws.CredentialsProvider
	var err error
	env := c.getenv
	switch {
	case c.named:
		p, err = profileCredentials(c, hc, c.name, 0)
	case env("AWS_ACCESS_KEY_ID") != "" && env("AWS_SECRET_ACCESS_KEY") != "":
		p = credentials.NewStaticCredentialsProvider(env("AWS_ACCESS_KEY_ID"), env("AWS_SECRET_ACCESS_KEY"), env("AWS_SESSION_TOKEN"))
	case env("AWS_WEB_IDENTITY_TOKEN_FILE") != "":
		p = &webIdentity{sts: stsClient{c: c, hc: hc}, tokenFile: env("AWS_WEB_IDENTITY_TOKEN_FILE"),
			role: env("AWS_ROLE_ARN"), session: env("AWS_ROLE_SESSION_NAME")}
	default:
		p, err = profileCredentials(c, hc, c.name, 0)
	}
	if err != nil {
		return nil, err
	}
	return aws.NewCredentialsCache(p), nil
}

// maxSourceProfiles bounds a chain of source_profile settings.
const maxSourceProfiles = 8

// profileCredentials is the provider of the named profile.
func profileCredentials(c *awsConfig, hc httpDoer, name string, depth int) (aws.CredentialsProvider, error) {
	if depth > maxSourceProfiles {
		return nil, fmt.Errorf("AWS configuration: profile %q: source_profile chain longer than %d", name, maxSourceProfiles)
	}
	pr := c.all[name]
	if pr == nil {
		if c.named || depth > 0 {
			return nil, fmt.Errorf("AWS configuration: no profile %q in the shared config or credentials file", name)
		}
		pr = profile{}
	}
	sts := stsClient{c: c, hc: hc}
	var p aws.CredentialsProvider
	switch {
	case pr["source_profile"] != "" && pr["source_profile"] != name:
		src, err := profileCredentials(c, hc, pr["source_profile"], depth+1)
		if err != nil {
			return nil, err
		}
		p = src
	case pr["aws_access_key_id"] != "" && pr["aws_secret_access_key"] != "":
		p = credentials.NewStaticCredentialsProvider(pr["aws_access_key_id"], pr["aws_secret_access_key"], pr["aws_session_token"])
	case pr["credential_source"] != "":
		src, err := credentialSource(c, pr["credential_source"])
		if err != nil {
			return nil, fmt.Errorf("AWS configuration: profile %q: %v", name, err)
		}
		p = src
	case pr["web_identity_token_file"] != "":
		return &webIdentity{sts: sts, tokenFile: pr["web_identity_token_file"], role: pr["role_arn"], session: pr["role_session_name"]}, nil
	case pr["sso_session"] != "" || pr["sso_start_url"] != "":
		s, err := newSSOProvider(c, hc, name, pr)
		if err != nil {
			return nil, err
		}
		p = s
	case pr["login_session"] != "":
		return nil, fmt.Errorf("AWS configuration: profile %q signs in with `aws login`, which ckptcheck does not read; "+
			"add credential_process = aws configure export-credentials --profile %s --format process", name, name)
	case pr["credential_process"] != "":
		p = processcreds.NewProvider(pr["credential_process"])
	default:
		src, err := credentialSource(c, "")
		if err != nil {
			return nil, err
		}
		p = src
	}
	if pr["role_arn"] != "" {
		p = &assumeRole{sts: sts, source: aws.NewCredentialsCache(p), role: pr["role_arn"], session: pr["role_session_name"],
			externalID: pr["external_id"]}
	}
	return p, nil
}

// credentialSource is a profile's credential_source, or with "" the
// chain's last resorts: the container's role, then the instance's.
func credentialSource(c *awsConfig, source string) (aws.CredentialsProvider, error) {
	env := c.getenv
	switch source {
	case "Environment":
		if env("AWS_ACCESS_KEY_ID") == "" || env("AWS_SECRET_ACCESS_KEY") == "" {
			return nil, fmt.Errorf("credential_source Environment: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set")
		}
		return credentials.NewStaticCredentialsProvider(env("AWS_ACCESS_KEY_ID"), env("AWS_SECRET_ACCESS_KEY"), env("AWS_SESSION_TOKEN")), nil
	case "Ec2InstanceMetadata":
		return ec2rolecreds.New(), nil
	case "EcsContainer", "":
		rel, full := env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"), env("AWS_CONTAINER_CREDENTIALS_FULL_URI")
		switch {
		case rel != "":
			return containerProvider(c, ecsEndpoint+rel), nil
		case full != "":
			if err := allowedContainerURL(full); err != nil {
				return nil, err
			}
			return containerProvider(c, full), nil
		case source == "EcsContainer":
			return nil, fmt.Errorf("credential_source EcsContainer: AWS_CONTAINER_CREDENTIALS_RELATIVE_URI or _FULL_URI is not set")
		}
		if strings.EqualFold(env("AWS_EC2_METADATA_DISABLED"), "true") {
			return nil, fmt.Errorf("no AWS credentials found (and AWS_EC2_METADATA_DISABLED is set)")
		}
		return ec2rolecreds.New(), nil
	}
	return nil, fmt.Errorf("credential_source %q is not Environment, Ec2InstanceMetadata or EcsContainer", source)
}

// containerProvider asks the container's agent, with the token of
// AWS_CONTAINER_AUTHORIZATION_TOKEN or, read at each call, of the file
// AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE names.
func containerProvider(c *awsConfig, endpoint string) aws.CredentialsProvider {
	return endpointcreds.New(endpoint, func(o *endpointcreds.Options) {
		o.AuthorizationToken = c.getenv("AWS_CONTAINER_AUTHORIZATION_TOKEN")
		if f := c.getenv("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"); f != "" {
			o.AuthorizationTokenProvider = endpointcreds.TokenProviderFunc(func() (string, error) {
				b, err := readSmallFile(f)
				return strings.TrimSpace(string(b)), err
			})
		}
	})
}

// allowedContainerURL lets a plain-http full URI name only loopback or the
// agents' addresses (as the SDK does): the token must not go elsewhere.
func allowedContainerURL(full string) error {
	u, err := url.Parse(full)
	if err != nil || u.Hostname() == "" {
		return fmt.Errorf("AWS_CONTAINER_CREDENTIALS_FULL_URI %q is not a URL", full)
	}
	if u.Scheme == "https" {
		return nil
	}
	addrs := []string{u.Hostname()}
	if net.ParseIP(u.Hostname()) == nil {
		if addrs, err = net.LookupHost(u.Hostname()); err != nil {
			return fmt.Errorf("AWS_CONTAINER_CREDENTIALS_FULL_URI: %v", err)
		}
	}
	for _, a := range addrs {
		ip := net.ParseIP(a)
		ok := ip != nil && ip.IsLoopback()
		for _, h := range containerHosts {
			ok = ok || ip.Equal(h)
		}
		if !ok {
			return fmt.Errorf("AWS_CONTAINER_CREDENTIALS_FULL_URI %q: plain http only to loopback or the container agent", full)
		}
	}
	return nil
}

// readSmallFile reads a shared file or a token file: a regular file (a
// FIFO would block) of at most maxConfigFile bytes.
func readSmallFile(path string) ([]byte, error) {
	if st, err := os.Stat(path); err != nil {
		return nil, err
	} else if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxConfigFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxConfigFile {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, maxConfigFile)
	}
	return b, nil
}
