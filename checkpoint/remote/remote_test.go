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

func TestHTTPSizeFromContentRange(t *testing.T) {
	dir := t.TempDir()
	full := paddedFile(300)
	os.WriteFile(filepath.Join(dir, "truncated.safetensors"), full[:len(full)-3], 0o644)
	os.WriteFile(filepath.Join(dir, "trailing.safetensors"), append(full, 1, 2, 3), 0o644)
	os.WriteFile(filepath.Join(dir, "empty.safetensors"), nil, 0o644)
	os.WriteFile(filepath.Join(dir, "short.safetensors"), []byte{1, 2, 3}, 0o644)
	s := serve(t, dir)
	var w waits
	for name, kind := range map[string]safetensors.ErrorKind{
		"truncated": safetensors.MetadataIncompleteBuffer, "trailing": safetensors.MetadataIncompleteBuffer,
		"empty": safetensors.HeaderTooSmall, "short": safetensors.HeaderTooSmall,
	} {
		c := openRemoteT(t, s.URL+"/"+name+".safetensors", remoteOpts(&w))
		var fe *safetensors.FormatError
		if !errors.As(c.Shards[0].Err, &fe) || fe.Kind != kind {
			t.Errorf("%s: %v, want %v", name, c.Shards[0].Err, kind)
		}
	}
}

func TestHTTPServerIgnoringRange(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "small.safetensors"), paddedFile(1000), 0o644)
	big := paddedFile(1000)
	f, _ := os.Create(filepath.Join(dir, "big.safetensors"))
	f.Write(big)
	f.Truncate(512 << 20) // a sparse 512 MiB file: its tail is trailing bytes
	f.Close()
	s := serve(t, dir)
	s.SetNoRange(true)
	var w waits
	// A 200 whose length fits the range is a small file, read whole.
	c := openRemoteT(t, s.URL+"/small.safetensors", remoteOpts(&w))
	if c.Shards[0].File == nil || c.Shards[0].Err != nil {
		t.Fatalf("small file: %+v", c.Shards[0])
	}
	// A 200 starting to send a larger file stops at once.
	s.Reset()
	_, err := open(s.URL+"/big.safetensors", remoteOpts(&w))
	if !errors.Is(err, errIgnoresRange) || !strings.Contains(err.Error(), "536,870,912-byte file") {
		t.Fatalf("big file: %v", err)
	}
	if s.Bytes() > 64<<20 { // Bytes waits for the answers under way
		t.Errorf("%d bytes sent before stopping", s.Bytes())
	}
}

func TestHTTPRetries(t *testing.T) {
	dir := t.TempDir()
	writeTiny(t, dir)
	s := serve(t, dir)
	var n atomic.Int32
	s.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		if !strings.HasSuffix(r.URL.Path, ".safetensors") {
			return false
		}
		switch n.Add(1) {
		case 1:
			w.Header().Set("Retry-After", "3")
			http.Error(w, "slow down", http.StatusTooManyRequests)
			return true
		case 2:
			http.Error(w, "oops", http.StatusBadGateway)
			return true
		}
		return false
	})
	var w waits
	c := openRemoteT(t, s.URL+"/model-00001-of-00003.safetensors", remoteOpts(&w))
	if c.Shards[0].File == nil {
		t.Fatal("not opened")
	}
	got := w.List()
	if len(got) != 2 || got[0] != 3*time.Second || got[1] <= 0 || got[1] > time.Second {
		t.Errorf("waits %v, want Retry-After's 3s then a short backoff", got)
	}
	// A server that keeps failing: the error says why, after maxAttempts.
	s.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		if strings.HasSuffix(r.URL.Path, ".safetensors") {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return true
		}
		return false
	})
	w = waits{}
	_, err := open(s.URL+"/model-00001-of-00003.safetensors", remoteOpts(&w))
	if err == nil || !strings.Contains(err.Error(), "HTTP 503") || len(w.List()) != maxAttempts-1 {
		t.Errorf("%v after %d waits", err, len(w.List()))
	}
}

// TestHTTPClosedBeforeAnswer: a connection the server closes before
// answering (the transport's io.EOF) is retried, and an error that
// persists says so in words.
func TestHTTPClosedBeforeAnswer(t *testing.T) {
	dir := t.TempDir()
	writeTiny(t, dir)
	s := serve(t, dir)
	const shard = "/model-00001-of-00003.safetensors"
	var closes atomic.Int32
	s.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path != shard || closes.Add(-1) < 0 {
			return false
		}
		if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
			conn.Close()
		}
		return true
	})
	for _, tc := range []struct {
		closes int32
		want   string // "" for opened
	}{{1, ""}, {maxAttempts, "connection closed early"}} {
		closes.Store(tc.closes)
		var w waits
		opt := remoteOpts(&w)
		// A fresh connection per request: Go's transport retries a request
		// on a reused connection by itself, which would hide the case.
		opt.Remote.Transport = &http.Transport{DisableKeepAlives: true}
		c, err := open(s.URL+shard, opt)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("closed %d times: %v", tc.closes, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("closed %d times: %v, want %q", tc.closes, err, tc.want)
		case len(w.List()) != int(min(tc.closes, maxAttempts-1)):
			t.Errorf("closed %d times: waits %v", tc.closes, w.List())
		}
		if c != nil {
			c.Close()
		}
	}
}

// writeBig writes a file whose one tensor (1 MiB) lies past the bytes
// read at open.
func writeBig(t *testing.T, dir string) {
	t.Helper()
	data := make([]byte, 1<<20)
	for i := range data {
		data[i] = byte(i * 7)
	}
	err := fixture.WriteFile(filepath.Join(dir, "model-00001-of-00003.safetensors"),
		[]fixture.Tensor{{Name: "w", DType: safetensors.U8, Shape: []uint64{1 << 20}, Data: data}}, nil)
	if err != nil {
		t.Fatal(err)
	}
}

func TestHTTPDroppedConnection(t *testing.T) {
	dir := t.TempDir()
	writeBig(t, dir)
	s := serve(t, dir)
	var w waits
	c := openRemoteT(t, s.URL+"/model-00001-of-00003.safetensors", remoteOpts(&w))
	tn := c.Shards[0].Safetensors().Tensors[0]
	want := make([]byte, tn.Size())
	local, _ := os.ReadFile(filepath.Join(dir, "model-00001-of-00003.safetensors"))
	copy(want, local[8+c.Shards[0].Safetensors().HeaderSize+tn.DataOffsets[0]:])
	// The next two data reads break off half way; the reader resumes.
	// Only the shard's requests count: the companion files probed for
	// at open may still be under way.
	const shard = "/model-00001-of-00003.safetensors"
	var drops atomic.Int32
	s.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path == shard && drops.Add(1) <= 2 {
			remotetest.DropMidBody(w, r, dir)
		}
		return false
	})
	s.Reset()
	got := make([]byte, len(want))
	if _, err := tn.Open().ReadAt(got, 0); err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("bytes differ after a dropped connection")
	}
	log := requestsFor(s, shard)
	if len(log) != 3 || log[1].Range == log[0].Range {
		t.Errorf("requests %+v: want the broken range resumed", log)
	}
}

func TestHTTPFileReplaced(t *testing.T) {
	dir := t.TempDir()
	writeBig(t, dir)
	s := serve(t, dir)
	var w waits
	c := openRemoteT(t, s.URL+"/model-00001-of-00003.safetensors", remoteOpts(&w))
	name := filepath.Join(dir, "model-00001-of-00003.safetensors")
	b, _ := os.ReadFile(name)
	os.WriteFile(name, b, 0o644)
	os.Chtimes(name, time.Now(), time.Now().Add(time.Hour)) // a new ETag, same size
	buf := make([]byte, 64)
	_, err := c.Shards[0].Safetensors().Tensors[0].Open().ReadAt(buf, 512<<10)
	if !errors.Is(err, checkpoint.ErrChanged) || !errors.Is(c.Unchanged(), checkpoint.ErrChanged) {
		t.Fatalf("replaced file: read %v, unchanged %v", err, c.Unchanged())
	}
	// The read is the shard's last request; the companion files probed
	// for at open may still be answered after it, so the log is filtered.
	etag := ""
	for _, v := range c.Remote.Files {
		if v.Name == "model-00001-of-00003.safetensors" {
			etag = v.ETag
		}
	}
	log := requestsFor(s, "/model-00001-of-00003.safetensors")
	if len(log) != 2 || etag == "" || log[1].IfMatch != etag {
		t.Errorf("the read did not send If-Match with the ETag read at open: %+v", log)
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

func TestParseContentRange(t *testing.T) {
	for _, tc := range []struct {
		in                string
		first, last, size int64
		ok                bool
	}{
		{"bytes 0-100007/61000000000", 0, 100007, 61000000000, true},
		{"bytes 5-9/*", 5, 9, -1, true},
		{"bytes 0-9/10", 0, 9, 10, true},
		{"bytes 0-9/9", 0, 0, 0, false}, // the last byte past the end
		{"bytes 9-0/10", 0, 0, 0, false},
		{"bytes */10", 0, 0, 0, false},
		{"items 0-9/10", 0, 0, 0, false},
		{"bytes -1-9/10", 0, 0, 0, false},
	} {
		f, l, s, ok := ParseContentRange(tc.in)
		if ok != tc.ok || (ok && (f != tc.first || l != tc.last || s != tc.size)) {
			t.Errorf("%q: %d %d %d %v", tc.in, f, l, s, ok)
		}
	}
}

func FuzzParseContentRange(f *testing.F) {
	for _, s := range []string{"bytes 0-100007/61000000000", "bytes 5-9/*", "bytes */0", "bytes 1-0/5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		first, last, size, ok := ParseContentRange(s)
		if ok && (first < 0 || last < first || (size != -1 && size <= last)) {
			t.Errorf("%q: %d-%d/%d accepted", s, first, last, size)
		}
	})
}

func TestRetryAfter(t *testing.T) {
	for in, want := range map[string]time.Duration{"": 0, "3": 3 * time.Second, "-1": 0, "soon": 0,
		time.Now().Add(-time.Hour).UTC().Format(http.TimeFormat): 0} {
		if got := RetryAfter(in); got != want {
			t.Errorf("%q: %v, want %v", in, got, want)
		}
	}
	if d := RetryAfter(time.Now().Add(time.Minute).UTC().Format(http.TimeFormat)); d < 50*time.Second || d > time.Minute {
		t.Errorf("an HTTP date a minute ahead: %v", d)
	}
}

// writeRandom writes a file of n random-ish bytes named name in dir.
func writeRandom(t *testing.T, dir, name string, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	x := uint32(1)
	for i := range b {
		x = x*1664525 + 1013904223
		b[i] = byte(x >> 24)
	}
	if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return b
}

func TestReadAheadSequential(t *testing.T) {
	dir := t.TempDir()
	const size = 5*aheadChunk + 12345
	want := writeRandom(t, dir, "big.safetensors", size)
	s := serve(t, dir)
	var w waits
	opt := remoteOpts(&w)
	var b Base
	f, err := b.OpenFile(context.Background(), s.URL+"/big.safetensors", &httpObject{client: newHTTPClient("", "", nil), url: s.URL + "/big.safetensors", display: "big"}, headerProbe, &opt.Remote, true)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s.Reset()
	// Eight readers take 512 KiB blocks in order, as the value engine does.
	const block = 512 << 10
	var next atomic.Int64
	next.Store(headerProbe)
	got := make([]byte, size)
	copy(got, want[:headerProbe])
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for {
				off := next.Add(block) - block
				if off >= size {
					return
				}
				n := min(block, size-off)
				if _, err := f.ReadAt(got[off:off+n], off); err != nil && err != io.EOF {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if !bytes.Equal(got, want) {
		t.Fatal("bytes differ")
	}
	// Whole chunks, few requests; only blocks read before the reads looked
	// sequential (one per reader at most) are read twice.
	if s.Requests() > 20 || s.Bytes() > size+8*block {
		t.Errorf("%d requests, %d bytes for a %d-byte file", s.Requests(), s.Bytes(), size)
	}
	b.pool.mu.Lock()
	if b.pool.made > aheadBuffers {
		t.Errorf("%d chunk buffers made", b.pool.made)
	}
	b.pool.mu.Unlock()
}

func TestReadAheadRandom(t *testing.T) {
	dir := t.TempDir()
	const size = 8 * aheadChunk
	want := writeRandom(t, dir, "big.safetensors", size)
	s := serve(t, dir)
	var w waits
	opt := remoteOpts(&w)
	f, err := new(Base).OpenFile(context.Background(), "big", &httpObject{client: newHTTPClient("", "", nil), url: s.URL + "/big.safetensors", display: "big"}, headerProbe, &opt.Remote, true)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s.Reset()
	// Reads that jump about transfer only their own bytes.
	var asked int64
	for _, off := range []int64{7 * aheadChunk, 2*aheadChunk + 5, 5 * aheadChunk, 3*aheadChunk + 100, aheadChunk} {
		p := make([]byte, 4096)
		if _, err := f.ReadAt(p, off); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(p, want[off:off+4096]) {
			t.Fatalf("bytes at %d differ", off)
		}
		asked += 4096
	}
	if s.Bytes() != asked {
		t.Errorf("%d bytes served for %d asked", s.Bytes(), asked)
	}
	// A replaced file is an error on the chunked path too.
	name := filepath.Join(dir, "big.safetensors")
	os.Chtimes(name, time.Now(), time.Now().Add(time.Hour))
	p := make([]byte, 4096)
	_, err1 := f.ReadAt(p, aheadChunk+4096)
	_, err2 := f.ReadAt(p, aheadChunk+8192)
	if !errors.Is(err1, checkpoint.ErrChanged) && !errors.Is(err2, checkpoint.ErrChanged) {
		t.Errorf("replaced file: %v, %v", err1, err2)
	}
}

func TestHTTPTimeout(t *testing.T) {
	dir := t.TempDir()
	writeTiny(t, dir)
	s := serve(t, dir)
	const shard = "/model-00001-of-00003.safetensors"
	// The first answer stalls until the client gives up on it: an attempt
	// has half the request's time, so the retry has the rest.
	var n atomic.Int32
	s.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path == shard && n.Add(1) == 1 {
			<-r.Context().Done()
			return true
		}
		return false
	})
	var w waits
	opt := remoteOpts(&w)
	opt.Remote.Timeout = 4 * time.Second
	c := openRemoteT(t, s.URL+shard, opt)
	if c.Shards[0].File == nil || len(w.List()) == 0 {
		t.Errorf("a stalled attempt is not retried within --timeout: %+v, waits %v", c.Shards[0], w.List())
	}
}

// TestHTTPTimeoutBound: a server that trickles a byte at a time ends a
// request, retries included, within --timeout (the bound asserted with
// slack for a busy machine), with a message naming --timeout. Waits are
// real here: they are part of the bound.
func TestHTTPTimeoutBound(t *testing.T) {
	dir := t.TempDir()
	writeTiny(t, dir)
	s := serve(t, dir)
	const shard = "/model-00001-of-00003.safetensors"
	s.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path != shard {
			return false
		}
		remotetest.Trickle(w, r, 1<<20, 20*time.Millisecond)
		return true
	})
	const timeout = time.Second
	opt := checkpoint.Options{Remote: checkpoint.RemoteOptions{Timeout: timeout}}
	start := time.Now()
	_, err := checkpoint.Open(context.Background(), s.URL+shard, opt)
	took := time.Since(start)
	if err == nil || !strings.Contains(err.Error(), "no complete answer within 1s (--timeout, retries included)") {
		t.Errorf("%v", err)
	}
	if took > 3*timeout {
		t.Errorf("took %v with --timeout %v", took, timeout)
	}
}
