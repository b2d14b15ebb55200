package remote

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ckptcheck/ckptcheck/checkpoint"
	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/internal/remotetest"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

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
