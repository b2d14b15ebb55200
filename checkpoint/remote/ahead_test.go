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
	"sync"
	"sync/atomic"
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
