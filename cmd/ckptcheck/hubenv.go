package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ckptcheck/ckptcheck/checkpoint/remote"
	"github.com/ckptcheck/ckptcheck/internal/wholefile"
)

// The Hugging Face settings huggingface_hub reads from the environment are
// read here, once, and passed to the library in checkpoint.RemoteOptions:
// the library reads none of them itself.

// maxTokenFile bounds the token file: a Hub token is about 40 bytes.
const maxTokenFile = 4 << 10

// hubToken is the Hub token: $HF_TOKEN (or the older
// $HUGGING_FACE_HUB_TOKEN), else the file the hf CLI's login writes:
// $HF_TOKEN_PATH, else $HF_HOME/token, else ~/.cache/huggingface/token.
// A token file that is missing, not a regular file or too large is no
// token, as for huggingface_hub.
func hubToken() string {
	t, _ := hubTokenFrom()
	return t
}

// hubTokenFrom is hubToken and where it came from: the variable's name or
// the file's path.
func hubTokenFrom() (token, from string) {
	for _, v := range []string{"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"} {
		if t := strings.TrimSpace(os.Getenv(v)); t != "" {
			return t, v
		}
	}
	file := os.Getenv("HF_TOKEN_PATH")
	if file == "" {
		file = filepath.Join(hubHome(), "token")
	}
	b, err := wholefile.ReadFile(file, wholefile.Limit{Kind: "HF token file", Max: maxTokenFile})
	if err != nil {
		return "", ""
	}
	return strings.TrimSpace(string(b)), file
}

// explainTokenError says where a malformed Hub token came from (the
// library knows only the token, which no message shows).
func explainTokenError(err error) error {
	if !errors.Is(err, remote.ErrMalformedToken) {
		return err
	}
	if _, from := hubTokenFrom(); from != "" {
		return fmt.Errorf("%w; it comes from %s", err, from)
	}
	return err
}

// hubHome is $HF_HOME, else $XDG_CACHE_HOME/huggingface, else
// ~/.cache/huggingface.
func hubHome() string {
	if h := os.Getenv("HF_HOME"); h != "" {
		return h
	}
	if x := os.Getenv("XDG_CACHE_HOME"); x != "" {
		return filepath.Join(x, "huggingface")
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "huggingface")
}

// hubOffline reports HF_HUB_OFFLINE set to a true value, as huggingface_hub
// reads it.
func hubOffline() bool {
	switch strings.ToUpper(strings.TrimSpace(os.Getenv("HF_HUB_OFFLINE"))) {
	case "1", "ON", "YES", "TRUE":
		return true
	}
	return false
}
