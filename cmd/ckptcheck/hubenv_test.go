package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestHubToken(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "token")
	os.WriteFile(file, []byte("hf_from_file\n"), 0o600)
	big := filepath.Join(dir, "big")
	os.WriteFile(big, []byte(strings.Repeat("x", maxTokenFile+1)), 0o600)
	home := filepath.Join(dir, "home")
	os.MkdirAll(home, 0o755)
	os.WriteFile(filepath.Join(home, "token"), []byte(" hf_from_home "), 0o600)
	for _, tc := range []struct {
		name, token, old, path, hfHome, want string
	}{
		{"HF_TOKEN wins", "hf_env", "hf_old", file, "", "hf_env"},
		{"the older variable", "", "hf_old", file, "", "hf_old"},
		{"HF_TOKEN_PATH", "", "", file, "", "hf_from_file"},
		{"HF_HOME/token", "", "", "", home, "hf_from_home"},
		{"missing file", "", "", filepath.Join(dir, "none"), "", ""},
		{"too large", "", "", big, "", ""},
		{"a directory", "", "", dir, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("HF_TOKEN", tc.token)
			t.Setenv("HUGGING_FACE_HUB_TOKEN", tc.old)
			t.Setenv("HF_TOKEN_PATH", tc.path)
			t.Setenv("HF_HOME", tc.hfHome)
			if got := hubToken(); got != tc.want {
				t.Errorf("token %q, want %q", got, tc.want)
			}
		})
	}
}

func TestHubOffline(t *testing.T) {
	for v, want := range map[string]bool{"1": true, "on": true, " yes ": true, "TRUE": true, "": false, "0": false, "no": false} {
		t.Setenv("HF_HUB_OFFLINE", v)
		if hubOffline() != want {
			t.Errorf("HF_HUB_OFFLINE=%q: %v", v, !want)
		}
	}
}
