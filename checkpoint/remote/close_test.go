package remote

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/ckptcheck/ckptcheck/checkpoint"
)

// settles waits (up to a generous bound) for cond to hold.
func settles(cond func() bool) bool {
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// TestCloseReleasesSource: Close of a checkpoint read over http closes
// the files opened ahead that nobody took (a companion file probed for at
// open) and the source's connections; no goroutine is left behind.
func TestCloseReleasesSource(t *testing.T) {
	dir := t.TempDir()
	writeTiny(t, dir)
	os.WriteFile(filepath.Join(dir, "generation_config.json"), []byte(`{}`), 0o644)
	s := serve(t, dir)
	before := runtime.NumGoroutine()
	var w waits
	c, err := open(s.URL+"/model-00001-of-00003.safetensors", remoteOpts(&w))
	if err != nil {
		t.Fatal(err)
	}
	if s.Conns() == 0 {
		t.Fatal("no connection open")
	}
	c.Close()
	if !settles(func() bool { return s.Conns() == 0 }) {
		t.Errorf("%d connections still open after Close", s.Conns())
	}
	if !settles(func() bool { return runtime.NumGoroutine() <= before }) {
		t.Errorf("%d goroutines after Close, %d before", runtime.NumGoroutine(), before)
	}
}

// TestOpenCancelledClosesPending: an Open cut short while its file is
// being opened ahead leaves nothing open.
func TestOpenCancelledClosesPending(t *testing.T) {
	closed := make(chan struct{})
	var b Base
	// The open ahead ends when it is cancelled, with a file (it had
	// finished as it was told to stop).
	b.OpenNow = func(ctx context.Context, name string) (checkpoint.File, error) {
		<-ctx.Done()
		return &closeFile{closed: closed}, nil
	}
	b.prefetch(context.Background(), "x")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := b.Open(ctx, "x"); err == nil {
		t.Fatal("no error from a cancelled Open")
	}
	select {
	case <-closed:
	case <-time.After(20 * time.Second):
		t.Fatal("the file opened ahead was never closed")
	}
	b.Close()
}

type closeFile struct {
	checkpoint.File
	closed chan struct{}
}

func (f *closeFile) Close() error { close(f.closed); return nil }

// TestProbeBudgetNoRange: a server that ignores Range answers every
// companion file probed for whole; what their first requests buffer at
// once stays within the source's probe budget, not a probe per file.
func TestProbeBudgetNoRange(t *testing.T) {
	dir := t.TempDir()
	writeTiny(t, dir)
	names := checkpoint.CompanionNames()[:12]
	for _, n := range names {
		f, err := os.Create(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		f.Truncate(20 << 20) // sparse
		f.Close()
	}
	s := serve(t, dir)
	var w waits
	// The answers stream 240 MiB in all: a slow, busy machine under -race
	// needs time for that, and the bound checked here is memory, not time.
	opts := remoteOpts(&w)
	opts.Remote.Timeout = 5 * time.Minute
	c := openRemoteT(t, s.URL+"/model.safetensors.index.json", opts)
	s.SetNoRange(true)
	files, err := c.Companions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < len(names) {
		t.Errorf("%d companion files found, want %d", len(files), len(names))
	}
	_, probes := c.Source.(Source).core().bounds()
	if p := probes.peak(); p > probeBudget || p < 20<<20 {
		t.Errorf("%d bytes buffered at once by first requests, budget %d", p, probeBudget)
	}
}
