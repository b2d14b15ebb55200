package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/internal/remotetest"
)

// TestRemoteS3RedirectRefused: an S3 endpoint that redirects to another
// server holding the same objects is exit 2, naming the bucket and the
// Location, and the other server gets no request (no signed header left).
func TestRemoteS3RedirectRefused(t *testing.T) {
	root := t.TempDir()
	if err := fixture.WritePublished(filepath.Join(root, "bucket", "published"), fixture.Tiny); err != nil {
		t.Fatal(err)
	}
	s, err := remotetest.NewS3(root)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	remotetest.S3Env(t, s.URL)
	for _, host := range []string{"127.0.0.1", "127.0.0.2"} {
		other, err := remotetest.NewS3(root, host)
		if err != nil {
			t.Skipf("cannot listen on %s: %v", host, err)
		}
		defer other.Close()
		s.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
			http.Redirect(w, r, other.URL+r.URL.RequestURI(), http.StatusTemporaryRedirect)
			return true
		})
		code, out, stderr := ckptcheck(t, "validate", "s3://bucket/published")
		if code != 2 || !strings.Contains(stderr, "bucket bucket: S3 answered HTTP 307") || !strings.Contains(stderr, `"`+other.URL+"/bucket") {
			t.Errorf("%s: exit %d\n%s%s", host, code, out, stderr)
		}
		if other.Requests() != 0 {
			t.Errorf("%s: the server redirected to got %+v", host, other.Log())
		}
	}
}

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
