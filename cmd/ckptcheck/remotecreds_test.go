package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/internal/remotetest"
)

// TestRemoteMalformedToken: a token with a line break inside, from
// HF_TOKEN or the token file, is exit 2 in one line that says where it
// came from and does not show it, before any request.
func TestRemoteMalformedToken(t *testing.T) {
	hub, err := remotetest.NewHub()
	if err != nil {
		t.Fatal(err)
	}
	defer hub.Close()
	file := filepath.Join(t.TempDir(), "token")
	os.WriteFile(file, []byte("hf_first_secret\nhf_second_secret\n"), 0o600)
	t.Setenv("HF_ENDPOINT", hub.URL)
	t.Setenv("HF_HUB_CACHE", t.TempDir())
	t.Setenv("HF_HUB_OFFLINE", "")
	t.Setenv("HUGGING_FACE_HUB_TOKEN", "")
	for _, tc := range []struct{ env, file, from string }{
		{"hf_first_secret\r\nX-Injected: 1", "", "it comes from HF_TOKEN"},
		{"", file, "it comes from " + file},
	} {
		t.Setenv("HF_TOKEN", tc.env)
		t.Setenv("HF_TOKEN_PATH", tc.file)
		code, out, stderr := ckptcheck(t, "validate", "hf://org/model")
		if code != 2 || !strings.Contains(stderr, "hf://org/model: the Hub token is malformed: it holds a line break") || !strings.Contains(stderr, tc.from) {
			t.Errorf("exit %d\n%s%s", code, out, stderr)
		}
		if strings.Contains(out+stderr, "secret") || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("the token shown, or more than one line: %q", stderr)
		}
		// A local path does not need the token: it is not looked at.
		dir := filepath.Join(t.TempDir(), "m")
		fixture.WritePublished(dir, fixture.Tiny)
		if code, out, stderr := ckptcheck(t, "validate", dir); code != 0 {
			t.Errorf("local path with a malformed token: exit %d\n%s%s", code, out, stderr)
		}
	}
	if hub.Requests() != 0 {
		t.Errorf("%d requests to the Hub", hub.Requests())
	}
}
