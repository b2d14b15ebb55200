package verify

import (
	"context"
	"crypto/sha256"
	"path/filepath"
	"sync"
	"testing"

	"github.com/ckptcheck/ckptcheck/checkpoint"
	"github.com/ckptcheck/ckptcheck/internal/fixture"
)

// writeModel writes tensors as n shards (1: a single model.safetensors)
// with the tiny config and the given files beside them.
func writeModel(t *testing.T, tensors []fixture.Tensor, n int, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "m")
	if err := fixture.WriteModel(dir, tensors, n, files); err != nil {
		t.Fatal(err)
	}
	return dir
}

// countingSource counts the bytes read of each file, and the opens.
type countingSource struct {
	checkpoint.Dir
	mu    sync.Mutex
	read  map[string]int64
	opens map[string]int
}

func newCounting(dir string) *countingSource {
	return &countingSource{Dir: checkpoint.Dir(dir), read: map[string]int64{}, opens: map[string]int{}}
}

func (s *countingSource) Open(ctx context.Context, name string) (checkpoint.File, error) {
	f, err := s.Dir.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.opens[name]++
	s.mu.Unlock()
	return &countingFile{File: f, s: s, name: name}, nil
}

type countingFile struct {
	checkpoint.File
	s    *countingSource
	name string
}

func (f *countingFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.File.ReadAt(p, off)
	f.s.mu.Lock()
	f.s.read[f.name] += int64(n)
	f.s.mu.Unlock()
	return n, err
}

func sha256Sum(b []byte) [32]byte { return sha256.Sum256(b) }
