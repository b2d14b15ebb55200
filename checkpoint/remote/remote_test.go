package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ckptcheck/ckptcheck/checkpoint"
	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/internal/remotetest"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// serve serves dir on loopback for the test.
func serve(t *testing.T, dir string) *remotetest.Server {
	t.Helper()
	s, err := remotetest.NewServer(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

type waits = remotetest.Waits

// testOpts are the options of a test's opens, and where their waits go.
type testOpts struct {
	checkpoint.Options
	w *waits
}

func remoteOpts(w *waits) testOpts {
	return testOpts{checkpoint.Options{Remote: checkpoint.RemoteOptions{Timeout: 10 * time.Second}}, w}
}

// open opens p as checkpoint.Open does, recording the waits.
func open(p string, opt testOpts) (*checkpoint.Checkpoint, error) {
	return checkpoint.Open(WithWait(context.Background(), opt.w.Sleep), p, opt.Options)
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

var paddedFile = remotetest.PaddedFile

func TestHTTPHeaderProbeEdges(t *testing.T) {
	dir := t.TempDir()
	// The first request asks for bytes 0-100007: the 8-byte length and
	// 100,000 bytes of header. A header of 100,000 bytes fits; one of
	// 100,001 takes a second request for its last byte.
	cases := []struct {
		header, requests int
	}{{99_992, 1}, {99_993, 1}, {100_000, 1}, {100_001, 2}, {200_000, 2}, {100, 1}}
	for _, tc := range cases {
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("h%d.safetensors", tc.header)), paddedFile(tc.header), 0o644)
	}
	s := serve(t, dir)
	var w waits
	for _, tc := range cases {
		t.Run(fmt.Sprint(tc.header), func(t *testing.T) {
			s.Reset()
			c := openRemoteT(t, fmt.Sprintf("%s/h%d.safetensors", s.URL, tc.header), remoteOpts(&w))
			sh := c.Shards[0]
			if sh.File == nil || sh.Safetensors().HeaderSize != uint64(tc.header) {
				t.Fatalf("header not read: %+v", sh)
			}
			if sh.Err != nil {
				t.Errorf("format error: %v", sh.Err)
			}
			var shardReqs []remotetest.Request
			for _, r := range s.Log() {
				if strings.HasSuffix(r.Path, ".safetensors") {
					shardReqs = append(shardReqs, r)
				}
			}
			if len(shardReqs) != tc.requests {
				t.Fatalf("%d requests for the file, want %d: %+v", len(shardReqs), tc.requests, shardReqs)
			}
			if shardReqs[0].Range != "bytes=0-100007" {
				t.Errorf("first range %q", shardReqs[0].Range)
			}
			if tc.requests == 2 && tc.header < 200_000 && shardReqs[1].Range != fmt.Sprintf("bytes=100008-%d", 8+tc.header-1) {
				t.Errorf("second range %q", shardReqs[1].Range)
			}
			data := make([]byte, 8)
			if _, err := sh.Safetensors().Tensors[0].Open().ReadAt(data, 0); err != nil && !errors.Is(err, io.EOF) {
				t.Fatal(err)
			}
			if !bytes.Equal(data, []byte{0, 0, 0x80, 0x3f, 0, 0, 0, 0x40}) {
				t.Errorf("tensor bytes %v", data)
			}
			if c.Remote == nil || c.Remote.Listed || len(c.Remote.Files) == 0 || c.Remote.Files[0].ETag == "" {
				t.Errorf("remote = %+v", c.Remote)
			}
		})
	}
}

func writeTiny(t *testing.T, dir string) {
	t.Helper()
	if err := fixture.WriteSharded(dir, fixture.Tiny.Tensors(safetensors.BF16), 3, fixture.Tiny.Config("bfloat16")); err != nil {
		t.Fatal(err)
	}
}

func TestHTTPForms(t *testing.T) {
	dir := t.TempDir()
	writeTiny(t, dir)
	os.WriteFile(filepath.Join(dir, "stray.safetensors"), paddedFile(200), 0o644)
	s := serve(t, dir)
	var w waits
	for _, p := range []string{s.URL + "/model.safetensors.index.json", s.URL + "/", s.URL} {
		c := openRemoteT(t, p, remoteOpts(&w))
		if c.Index == nil || c.IndexErr != nil || len(c.Shards) != 3 || c.NumTensors() != len(fixture.Tiny.Specs()) || c.Config == nil {
			t.Fatalf("%s: %+v", p, c)
		}
		// No listing over HTTP: the stray file is not seen, and the
		// checkpoint says it could not look.
		if len(c.Unreferenced) != 0 || c.Remote.Listed || c.Remote.Kind != "http" {
			t.Errorf("%s: unreferenced %v, remote %+v", p, c.Unreferenced, c.Remote)
		}
		if got := c.Shards[0].Path; got != s.URL+"/model-00001-of-00003.safetensors" {
			t.Errorf("shard path %q", got)
		}
		if len(c.Remote.Files) != 5 { // index, config, 3 shards
			t.Errorf("versions %+v", c.Remote.Files)
		}
	}
	c := openRemoteT(t, s.URL+"/model-00002-of-00003.safetensors?sig=secret", remoteOpts(&w))
	if len(c.Shards) != 1 || c.Shards[0].File == nil || c.PartOf != nil {
		t.Fatalf("single file: %+v", c)
	}
	if strings.Contains(c.Shards[0].Path, "secret") || strings.Contains(c.Remote.Name, "secret") {
		t.Errorf("query shown: %q %q", c.Shards[0].Path, c.Remote.Name)
	}
}

// countingTransport counts the requests it carries.
type countingTransport struct{ n atomic.Int64 }

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return http.DefaultTransport.RoundTrip(r)
}

func TestTransport(t *testing.T) {
	dir := t.TempDir()
	writeTiny(t, dir)
	s := serve(t, dir)
	hub, _ := newHub(t, "")
	var w waits
	for _, tc := range []struct {
		path   string
		opt    testOpts
		server interface{ Requests() int64 }
	}{
		{s.URL + "/model.safetensors.index.json", remoteOpts(&w), s},
		{"hf://org/model", hubOpts(&w, hub), hub},
	} {
		var tr countingTransport
		tc.opt.Remote.Transport = &tr
		c := openRemoteT(t, tc.path, tc.opt)
		// Served first: a probe for a companion file may still be starting,
		// and it passes the transport before the server counts it.
		served := tc.server.Requests()
		if carried := tr.n.Load(); len(c.Shards) != 3 || carried == 0 || carried < served {
			t.Errorf("%s: %d requests through the transport, %d served", tc.path, carried, served)
		}
	}
}

func TestHTTPMissingAndRefused(t *testing.T) {
	dir := t.TempDir()
	writeTiny(t, dir)
	s := serve(t, dir)
	s.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		switch {
		case strings.HasPrefix(r.URL.Path, "/private/"):
			http.Error(w, "no", http.StatusUnauthorized)
			return true
		case strings.HasPrefix(r.URL.Path, "/forbidden/"):
			http.Error(w, "no", http.StatusForbidden)
			return true
		}
		return false
	})
	var w waits
	for _, tc := range []struct {
		path string
		is   error
		want string
	}{
		{"/nothing.safetensors", fs.ErrNotExist, "not found (HTTP 404"},
		{"/nothing.safetensors.index.json", fs.ErrNotExist, "not found (HTTP 404"},
		{"/empty-dir/", nil, "no model.safetensors.index.json or model.safetensors"},
		{"/private/model.safetensors", fs.ErrPermission, "access refused (HTTP 401"},
		{"/forbidden/model.safetensors.index.json", fs.ErrPermission, "access refused (HTTP 403"},
	} {
		_, err := open(s.URL+tc.path, remoteOpts(&w))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), s.URL+tc.path) {
			t.Errorf("%s: %v", tc.path, err)
		}
		if tc.is != nil && !errors.Is(err, tc.is) {
			t.Errorf("%s: %v is not %v", tc.path, err, tc.is)
		}
	}
	if len(w.List()) != 0 {
		t.Errorf("404/401/403 were retried: %v", w.List())
	}
	// A shard the index names that the server lacks is a missing shard.
	os.Remove(filepath.Join(dir, "model-00002-of-00003.safetensors"))
	c := openRemoteT(t, s.URL+"/model.safetensors.index.json", remoteOpts(&w))
	if c.Shards[1].Status != checkpoint.ShardMissing || c.Shards[0].Status == checkpoint.ShardMissing {
		t.Errorf("missing shard not recorded: %+v", c.Shards[1])
	}
}

// requestsFor is the requests s has logged for path, in order.
func requestsFor(s *remotetest.Server, path string) []remotetest.Request {
	var out []remotetest.Request
	for _, r := range s.Log() {
		if r.Path == path {
			out = append(out, r)
		}
	}
	return out
}

func TestHTTPConcurrentHeaders(t *testing.T) {
	dir := t.TempDir()
	if err := fixture.WriteSharded(dir, fixture.TinyMoE.Tensors(safetensors.BF16), 40, fixture.TinyMoE.Config("bfloat16")); err != nil {
		t.Fatal(err)
	}
	s := serve(t, dir)
	// Header requests wait until 16 are in flight at once: they all
	// arrive at once, or (after a generous wait) the test fails.
	const want = 16
	var inFlight, peak atomic.Int32
	enough := make(chan struct{})
	var once sync.Once
	s.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		if !strings.HasSuffix(r.URL.Path, ".safetensors") {
			return false
		}
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		if n >= want {
			once.Do(func() { close(enough) })
		}
		select {
		case <-enough:
		case <-time.After(30 * time.Second):
		}
		return false
	})
	var w waits
	c := openRemoteT(t, s.URL+"/model.safetensors.index.json", remoteOpts(&w))
	if len(c.Shards) < 20 {
		t.Fatal(len(c.Shards))
	}
	if peak.Load() < want {
		t.Errorf("at most %d requests in flight, want shards fetched ≥ 16 at once", peak.Load())
	}
}
