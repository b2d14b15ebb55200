package s3

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// The AWS configuration this package reads, as the AWS CLI and SDKs
// document it (docs.aws.amazon.com/sdkref/latest/guide/file-format.html
// and settings-reference.html). It is read here rather than by the SDK's
// config package because that package links the STS, SSO, SSO-OIDC and
// sign-in clients, whose endpoint tables and schemas take half a
// millisecond to initialise in every run of ckptcheck, S3 or not.

// maxConfigFile bounds the shared files read: they are a few kilobytes.
const maxConfigFile = 1 << 20

// A profile is one section of the shared files: its settings by name
// (lower-case), the config file's over the credentials file's.
type profile map[string]string

// awsConfig is what the environment and the shared files say.
type awsConfig struct {
	getenv  func(string) string
	name    string             // the profile's name
	named   bool               // AWS_PROFILE (or AWS_DEFAULT_PROFILE) names it
	profile profile            // the selected profile (empty if none)
	all     map[string]profile // every profile, for source_profile
	ssoSess map[string]profile // [sso-session name] sections
}

// loadAWSConfig reads the environment and the shared files. A missing
// file is no error; an unreadable or oversized one is.
func loadAWSConfig(getenv func(string) string) (*awsConfig, error) {
	c := &awsConfig{getenv: getenv, all: map[string]profile{}, ssoSess: map[string]profile{}}
	c.name = getenv("AWS_PROFILE")
	if c.name == "" {
		c.name = getenv("AWS_DEFAULT_PROFILE")
	}
	c.named = c.name != ""
	if !c.named {
		c.name = "default"
	}
	home, _ := os.UserHomeDir()
	credFile := getenv("AWS_SHARED_CREDENTIALS_FILE")
	if credFile == "" && home != "" {
		credFile = filepath.Join(home, ".aws", "credentials")
	}
	cfgFile := getenv("AWS_CONFIG_FILE")
	if cfgFile == "" && home != "" {
		cfgFile = filepath.Join(home, ".aws", "config")
	}
	// The credentials file first: the config file's settings win.
	for _, f := range []struct {
		path   string
		config bool
	}{{credFile, false}, {cfgFile, true}} {
		if f.path == "" {
			continue
		}
		if err := c.readFile(f.path, f.config); err != nil {
			return nil, err
		}
	}
	c.profile = c.all[c.name]
	if c.profile == nil {
		c.profile = profile{}
	}
	return c, nil
}

func (c *awsConfig) readFile(path string, config bool) error {
	data, err := readSmallFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("AWS configuration: %v", err)
	}
	parseShared(data, config, c.all, c.ssoSess)
	return nil
}

// parseShared reads one shared file's sections into profiles. In the
// config file a profile is [profile name] (or [default]); in the
// credentials file it is [name]. Indented lines continue a nested
// setting (such as "s3 =" and its sub-settings), which this package does
// not use; comments start with # or ;.
func parseShared(data []byte, config bool, profiles, ssoSessions map[string]profile) {
	var cur profile
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), maxConfigFile)
	for sc.Scan() {
		raw := sc.Text()
		line := strings.TrimSpace(raw)
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if raw[0] == ' ' || raw[0] == '\t' {
			continue // a nested sub-setting
		}
		if line[0] == '[' {
			cur = nil
			end := strings.IndexByte(line, ']')
			if end < 0 {
				continue
			}
			name := strings.TrimSpace(line[1:end])
			target := profiles
			switch kind, rest, ok := strings.Cut(name, " "); {
			case config && ok && kind == "profile":
				name = strings.TrimSpace(rest)
			case config && ok && kind == "sso-session":
				name, target = strings.TrimSpace(rest), ssoSessions
			case config && name != "default":
				continue // not a profile
			}
			if target[name] == nil {
				target[name] = profile{}
			}
			cur = target[name]
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok || cur == nil {
			continue
		}
		value = strings.TrimSpace(value)
		if i := strings.Index(value, " #"); i >= 0 {
			value = strings.TrimSpace(value[:i])
		}
		cur[strings.ToLower(strings.TrimSpace(key))] = value
	}
}

// setting is a setting of the profile, or "".
func (c *awsConfig) setting(key string) string { return c.profile[key] }

// region is AWS_REGION, AWS_DEFAULT_REGION or the profile's region.
func (c *awsConfig) region() string {
	for _, v := range []string{c.getenv("AWS_REGION"), c.getenv("AWS_DEFAULT_REGION"), c.setting("region")} {
		if v != "" {
			return v
		}
	}
	return ""
}

// endpoint is the S3 endpoint configured: AWS_ENDPOINT_URL_S3,
// AWS_ENDPOINT_URL or the profile's endpoint_url, unless
// AWS_IGNORE_CONFIGURED_ENDPOINT_URLS is true.
func (c *awsConfig) endpoint() string {
	if strings.EqualFold(c.getenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"), "true") ||
		strings.EqualFold(c.setting("ignore_configured_endpoint_urls"), "true") {
		return ""
	}
	for _, v := range []string{c.getenv("AWS_ENDPOINT_URL_S3"), c.getenv("AWS_ENDPOINT_URL"), c.setting("endpoint_url")} {
		if v != "" {
			return v
		}
	}
	return ""
}

// caBundle is the PEM file of extra roots: AWS_CA_BUNDLE or ca_bundle.
func (c *awsConfig) caBundle() string {
	if v := c.getenv("AWS_CA_BUNDLE"); v != "" {
		return v
	}
	return c.setting("ca_bundle")
}
