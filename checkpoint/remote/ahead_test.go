package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ckptcheck/ckptcheck/checkpoint"
)

// TestReadAheadFailedChunk: a read spanning a chunk that fails and one
// still under way gets the error; the pending chunk's buffer is not
// reused while its request writes into it (-race sees it), so another
// file of the same source read meanwhile gets its own bytes, and a read
// of the first file after the error gets its bytes too.
func TestReadAheadFailedChunk(t *testing.T) {
	dir := t.TempDir()
	const size = 6 * aheadChunk
	a := writeRandom(t, dir, "a.safetensors", size)
	b := bytes.Clone(a)
	for i := range b {
		b[i] = ^b[i]
	}
	os.WriteFile(filepath.Join(dir, "b.safetensors"), b, 0o644)
	s := serve(t, dir)
	release := make(chan struct{})
	s.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path != "/a.safetensors" {
			return false
		}
		var from int64
		fmt.Sscanf(r.Header.Get("Range"), "bytes=%d-", &from)
		switch {
		case from == 2*aheadChunk:
			http.Error(w, "gone", http.StatusForbidden) // not retried
			return true
		case from >= 3*aheadChunk:
			<-release // slow: under way while the reader fails
		}
		return false
	})
	opt := checkpoint.RemoteOptions{Timeout: time.Minute}
	var base Base
	openT := func(name string) *File {
		obj := &httpObject{client: newHTTPClient("", "", nil), url: s.URL + "/" + name, display: name}
		f, err := base.OpenFile(context.Background(), name, obj, headerProbe, &opt, true)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	fa, fb := openT("a.safetensors"), openT("b.safetensors")
	defer fb.Close()
	const block = 1 << 20
	p := make([]byte, block)
	var err error
	off := int64(headerProbe)
	for ; off < 2*aheadChunk && err == nil; off += block {
		_, err = fa.ReadAt(p, off)
	}
	// The read spanning chunks 2 (refused) and 3 (under way).
	_, err = fa.ReadAt(p, 3*aheadChunk-block/2)
	var re *ReadError
	if !errors.As(err, &re) || !errors.Is(err, fs.ErrPermission) || re.Path != "a.safetensors" || re.Off != 3*aheadChunk-block/2 {
		t.Fatalf("read across the refused chunk: %v", err)
	}
	// The other file's reads take buffers from the same pool while a's
	// abandoned chunks are still being fetched: its first chunk read, it
	// holds the rest read ahead.
	got := make([]byte, size)
	readAll := func(from, to int64) {
		for o := from; o < to; o += block {
			if _, err := fb.ReadAt(got[o:min(o+block, to)], o); err != nil {
				t.Fatal(err)
			}
		}
	}
	readAll(0, aheadChunk)
	close(release)
	q := make([]byte, 4096)
	if _, err := fa.ReadAt(q, 3*aheadChunk+100); err != nil || !bytes.Equal(q, a[3*aheadChunk+100:][:4096]) {
		t.Errorf("reading a after the error: %v", err)
	}
	fa.Close() // waits for a's requests
	readAll(aheadChunk, size)
	if !bytes.Equal(got, b) {
		t.Fatal("b's bytes differ: a buffer was reused while a's request wrote into it")
	}
}

// TestReadAheadCancelled: closing a file while its chunks are under way
// ends the reads with an error and returns every buffer to the pool.
func TestReadAheadCancelled(t *testing.T) {
	dir := t.TempDir()
	const size = 4 * aheadChunk
	writeRandom(t, dir, "a.safetensors", size)
	s := serve(t, dir)
	release := make(chan struct{})
	var stalled sync.Once
	reached := make(chan struct{})
	s.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		var from int64
		fmt.Sscanf(r.Header.Get("Range"), "bytes=%d-", &from)
		if from >= aheadChunk {
			stalled.Do(func() { close(reached) })
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return true
		}
		return false
	})
	defer close(release)
	opt := checkpoint.RemoteOptions{Timeout: time.Minute}
	var base Base
	obj := &httpObject{client: newHTTPClient("", "", nil), url: s.URL + "/a.safetensors", display: "a"}
	f, err := base.OpenFile(context.Background(), "a", obj, headerProbe, &opt, true)
	if err != nil {
		t.Fatal(err)
	}
	p := make([]byte, 1<<20)
	f.ReadAt(p, headerProbe)
	done := make(chan error)
	go func() {
		var err error
		for off := int64(headerProbe + len(p)); err == nil && off < size; off += int64(len(p)) {
			_, err = f.ReadAt(p, off)
		}
		done <- err
	}()
	<-reached
	f.Close()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("read after Close: %v", err)
	}
	if n, made := len(base.pool.free), base.pool.made; n != made {
		t.Errorf("%d of %d buffers back in the pool", n, made)
	}
}

// TestReadAtDirect: small reads a chunk apart, which ReadAt takes for a
// stream and reads ahead, are through ReadAtDirect one request each for
// just their bytes.
func TestReadAtDirect(t *testing.T) {
	dir := t.TempDir()
	const size = 6 * aheadChunk
	want := writeRandom(t, dir, "a.bin", size)
	s := serve(t, dir)
	opt := checkpoint.RemoteOptions{Timeout: time.Minute}
	var base Base
	obj := &httpObject{client: newHTTPClient("", "", nil), url: s.URL + "/a.bin", display: "a.bin"}
	f, err := base.OpenFile(context.Background(), "a.bin", obj, headerProbe, &opt, true)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	before := s.Bytes()
	p := make([]byte, 30)
	for off := int64(aheadChunk); off < size; off += aheadChunk / 2 {
		if _, err := f.ReadAtDirect(p, off); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(p, want[off:off+30]) {
			t.Fatalf("bytes at %d differ", off)
		}
	}
	if got := s.Bytes() - before; got != 10*30 {
		t.Errorf("served %d bytes for ten reads of 30; want 300", got)
	}
}

// offsetsObject records the offset of every request made through it.
type offsetsObject struct {
	Object
	mu   sync.Mutex
	offs []int64
}

func (o *offsetsObject) Get(ctx context.Context, off, n int64, etag string) (*Part, error) {
	o.mu.Lock()
	o.offs = append(o.offs, off)
	o.mu.Unlock()
	return o.Object.Get(ctx, off, n, etag)
}

// TestReadAheadLaggingReader: a reader still in a chunk the others have
// left behind reads ahead of where they are, not of where it is: a chunk
// already consumed is not asked for again (it was, under load, when one of
// the value engine's readers lagged).
func TestReadAheadLaggingReader(t *testing.T) {
	dir := t.TempDir()
	const size = 4 * aheadChunk
	want := writeRandom(t, dir, "a.safetensors", size)
	s := serve(t, dir)
	opt := checkpoint.RemoteOptions{Timeout: time.Minute}
	var base Base
	obj := &offsetsObject{Object: &httpObject{client: newHTTPClient("", "", nil), url: s.URL + "/a.safetensors", display: "a"}}
	f, err := base.OpenFile(context.Background(), "a", obj, headerProbe, &opt, true)
	if err != nil {
		t.Fatal(err)
	}
	read := func(off, n int64) {
		t.Helper()
		p := make([]byte, n)
		if _, err := f.ReadAt(p, off); err != nil || !bytes.Equal(p, want[off:off+n]) {
			t.Fatalf("read at %d: %v", off, err)
		}
	}
	const block = 64 << 10
	read(headerProbe, block)         // the first read: direct
	read(headerProbe+block, block)   // sequential: chunk 0, and chunk 1 ahead
	read(aheadChunk, aheadChunk)     // chunk 1 whole: consumed, dropped
	read(headerProbe+3*block, block) // the lagging reader, still in chunk 0
	f.Close()                        // waits for the requests started
	asked := map[int64]int{}
	for _, off := range obj.offs {
		asked[off]++
	}
	if asked[aheadChunk] != 1 {
		t.Errorf("chunk 1 asked for %d times (requests at %v)", asked[aheadChunk], obj.offs)
	}
}
