package verify

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/zeebo/xxh3"

	"github.com/ckptcheck/ckptcheck/checkpoint"
)

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

func gitBlobSHA1(b []byte) [20]byte {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(b))
	h.Write(b)
	var out [20]byte
	h.Sum(out[:0])
	return out
}

// TestHashFiles checks every digest against the standard library and
// zeebo/xxh3's one-shot hash, for read sizes smaller and larger than the
// ranges, ranges that span reads, empty ranges, and gaps between ranges;
// and that each file is read once, whole.
func TestHashFiles(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(7, 7))
	sizes := []int{0, 1, 100, 4096, 70000}
	var jobs []hashJob
	contents := map[string][]byte{}
	for i, size := range sizes {
		b := make([]byte, size)
		for k := range b {
			b[k] = byte(rng.Uint32())
		}
		name := fmt.Sprintf("f%d", i)
		contents[name] = b
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
		j := hashJob{name: name, size: int64(size), sha256: true, gitSHA1: true}
		// Ranges at random cut points, some empty, some with gaps.
		off := int64(0)
		for off < int64(size) {
			start := off + int64(rng.IntN(3))%max(1, int64(size)-off)
			end := min(int64(size), start+int64(rng.IntN(9000)))
			if rng.IntN(5) == 0 {
				end = start
			}
			j.ranges = append(j.ranges, byteRange{start, end})
			off = max(end, start+1)
		}
		j.ranges = append(j.ranges, byteRange{int64(size), int64(size)}) // an empty tensor at the end
		jobs = append(jobs, j)
	}
	for _, chunk := range []int{1, 7, 64, 1000, 4096, 1 << 20} {
		t.Run(fmt.Sprint("chunk ", chunk), func(t *testing.T) {
			src := newCounting(dir)
			results, err := hashFiles(context.Background(), src, jobs, hashOptions{chunk: chunk, workers: 2})
			if err != nil {
				t.Fatal(err)
			}
			for i, j := range jobs {
				b := contents[j.name]
				r := results[i]
				if r.sha256 != sha256.Sum256(b) || r.gitSHA1 != gitBlobSHA1(b) {
					t.Errorf("%s: digests differ from the standard library's", j.name)
				}
				for k, rg := range j.ranges {
					if want := xxh3.Hash(b[rg.start:rg.end]); r.ranges[k] != want {
						t.Errorf("%s: range %d [%d, %d): xxh3 %x, want %x", j.name, k, rg.start, rg.end, r.ranges[k], want)
					}
				}
				if src.read[j.name] != j.size || (j.size > 0 && src.opens[j.name] != 1) {
					t.Errorf("%s: read %d bytes in %d opens; want %d in one", j.name, src.read[j.name], src.opens[j.name], j.size)
				}
			}
		})
	}
}

func TestHashFilesErrors(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "short"), []byte("abc"), 0o644)
	ctx := context.Background()
	_, err := hashFiles(ctx, checkpoint.Dir(dir), []hashJob{{name: "short", size: 10, sha256: true}}, hashOptions{})
	if !errors.Is(err, checkpoint.ErrChanged) || !strings.Contains(err.Error(), "short") {
		t.Errorf("a file that shrank: %v", err)
	}
	_, err = hashFiles(ctx, checkpoint.Dir(dir), []hashJob{{name: "absent", size: 1, sha256: true}}, hashOptions{})
	if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "absent")) || strings.Count(err.Error(), "absent") != 1 {
		t.Errorf("a missing file: %v", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := hashFiles(cancelled, checkpoint.Dir(dir), []hashJob{{name: "short", size: 3, sha256: true}}, hashOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

func sha256Sum(b []byte) [32]byte { return sha256.Sum256(b) }
