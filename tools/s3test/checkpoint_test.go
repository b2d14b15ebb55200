package s3test

import (
	"context"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ckptcheck/ckptcheck/checkpoint"
	"github.com/ckptcheck/ckptcheck/checkpoint/remote"
	_ "github.com/ckptcheck/ckptcheck/checkpoint/remote/s3" // the s3 scheme, under test
	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/internal/remotetest"
	"github.com/ckptcheck/ckptcheck/safetensors"
	"github.com/ckptcheck/ckptcheck/tools/s3fake"
)

// newS3 serves root's folders as buckets and sets the environment.
func newS3(t *testing.T, root string) *remotetest.Server {
	t.Helper()
	s, err := s3fake.New(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	s3fake.Env(t, s.URL)
	return s
}

// testOpts are the options of a test's opens, and where their waits go.
type testOpts struct {
	checkpoint.Options
	w *remotetest.Waits
}

func remoteOpts(w *remotetest.Waits) testOpts {
	return testOpts{checkpoint.Options{Remote: checkpoint.RemoteOptions{Timeout: 10 * time.Second}}, w}
}

// open opens p as checkpoint.Open does, recording the waits.
func open(p string, opt testOpts) (*checkpoint.Checkpoint, error) {
	return checkpoint.Open(remote.WithWait(context.Background(), opt.w.Sleep), p, opt.Options)
}

func openRemoteT(t *testing.T, p string, opt testOpts) *checkpoint.Checkpoint {
	t.Helper()
	c, err := open(p, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func writeTiny(t *testing.T, dir string) {
	t.Helper()
	if err := fixture.WriteSharded(dir, fixture.Tiny.Tensors(safetensors.BF16), 3, fixture.Tiny.Config("bfloat16")); err != nil {
		t.Fatal(err)
	}
}

func TestS3Open(t *testing.T) {
	root := t.TempDir()
	writeTiny(t, filepath.Join(root, "bucket", "ckpt", "published"))
	os.WriteFile(filepath.Join(root, "bucket", "ckpt", "published", "stray.safetensors"), remotetest.PaddedFile(200), 0o644)
	s := newS3(t, root)
	var w remotetest.Waits
	for _, p := range []string{"s3://bucket/ckpt/published", "s3://bucket/ckpt/published/", "s3://bucket/ckpt/published/model.safetensors.index.json"} {
		c := openRemoteT(t, p, remoteOpts(&w))
		if c.Index == nil || len(c.Shards) != 3 || c.Config == nil || c.NumTensors() == 0 {
			t.Fatalf("%s: %+v", p, c)
		}
		if !slices.Equal(c.Unreferenced, []string{"stray.safetensors"}) || !c.Remote.Listed || c.Remote.Name != "s3://bucket/ckpt/published" {
			t.Errorf("%s: unreferenced %v, remote %+v", p, c.Unreferenced, c.Remote)
		}
		if c.Shards[0].Path != "s3://bucket/ckpt/published/model-00001-of-00003.safetensors" {
			t.Errorf("path %q", c.Shards[0].Path)
		}
		for _, v := range c.Remote.Files {
			if v.ETag == "" {
				t.Errorf("no ETag: %+v", v)
			}
		}
	}
	c := openRemoteT(t, "s3://bucket/ckpt/published/model-00002-of-00003.safetensors", remoteOpts(&w))
	if len(c.Shards) != 1 || c.PartOf == nil {
		t.Errorf("single object: %+v", c)
	}
	// Requests went path-style to the endpoint, signed.
	for _, r := range s.Log() {
		if !strings.HasPrefix(r.Path, "/bucket") || !strings.HasPrefix(r.Authorization, "AWS4-HMAC-SHA256") {
			t.Errorf("request %+v", r)
			break
		}
	}
}

func TestS3Errors(t *testing.T) {
	root := t.TempDir()
	writeTiny(t, filepath.Join(root, "bucket", "m"))
	os.Remove(filepath.Join(root, "bucket", "m", "model-00003-of-00003.safetensors"))
	s := newS3(t, root)
	var w remotetest.Waits
	for _, tc := range []struct {
		path, want string
		is         error
	}{
		{"s3://bucket/m/nothing.safetensors", "s3://bucket/m/nothing.safetensors: not found (HTTP 404 NoSuchKey", fs.ErrNotExist},
		{"s3://nobucket/m/model.safetensors.index.json", "bucket nobucket does not exist", fs.ErrNotExist},
		{"s3://bucket/empty", "safetensors files and no index", nil},
		{"s3://", "s3://bucket/prefix", nil},
	} {
		_, err := open(tc.path, remoteOpts(&w))
		if err == nil || !strings.Contains(err.Error(), tc.want) || (tc.is != nil && !errors.Is(err, tc.is)) {
			t.Errorf("%s: %v", tc.path, err)
		}
		if err != nil && (strings.Contains(err.Error(), "RequestID") || strings.Contains(err.Error(), "operation error")) {
			t.Errorf("SDK internals in %q", err)
		}
	}
	c := openRemoteT(t, "s3://bucket/m", remoteOpts(&w))
	if c.Shards[2].Status != checkpoint.ShardMissing {
		t.Errorf("missing shard: %+v", c.Shards[2])
	}
	// Refused and throttled answers.
	var throttled atomic.Int32
	s.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		switch {
		case strings.Contains(r.URL.Path, "secret"):
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusForbidden)
			w.Write([]byte(`<?xml version="1.0"?><Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>`))
			return true
		case strings.HasSuffix(r.URL.Path, "model-00001-of-00003.safetensors") && throttled.Add(1) == 1:
			w.Header().Set("Retry-After", "1")
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(`<?xml version="1.0"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>`))
			return true
		}
		return false
	})
	_, err := open("s3://bucket/secret/model.safetensors", remoteOpts(&w))
	if err == nil || !strings.Contains(err.Error(), "access denied (HTTP 403 AccessDenied: Access Denied)") || !errors.Is(err, fs.ErrPermission) {
		t.Errorf("refused: %v", err)
	}
	w = remotetest.Waits{}
	c = openRemoteT(t, "s3://bucket/m/model-00001-of-00003.safetensors", remoteOpts(&w))
	if c.Shards[0].File == nil || len(w.List()) != 1 || w.List()[0].Seconds() != 1 {
		t.Errorf("throttled: waits %v", w.List())
	}
}

func TestS3NoSignRequest(t *testing.T) {
	root := t.TempDir()
	writeTiny(t, filepath.Join(root, "public"))
	s := newS3(t, root)
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	var w remotetest.Waits
	opt := remoteOpts(&w)
	opt.Remote.NoSignRequest = true
	c := openRemoteT(t, "s3://public", opt)
	if len(c.Shards) != 3 {
		t.Fatalf("%+v", c)
	}
	for _, r := range s.Log() {
		if r.Authorization != "" {
			t.Errorf("--no-sign-request sent Authorization %q", r.Authorization)
		}
	}
}
