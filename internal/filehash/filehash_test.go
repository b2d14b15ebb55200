package filehash

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/iotest"

	"github.com/ckptcheck/ckptcheck/internal/xxh3"
)

var errChanged = errors.New("input changed during the run")

// osFile is an *os.File with the size it had when opened.
type osFile struct {
	*os.File
	size int64
}

func (f *osFile) Size() int64 { return f.size }

// dir opens the files of a directory, counting the bytes read of each and
// the opens.
type dir struct {
	path  string
	mu    sync.Mutex
	read  map[string]int64
	opens map[string]int
}

func newDir(path string) *dir {
	return &dir{path: path, read: map[string]int64{}, opens: map[string]int{}}
}

func (d *dir) open(_ context.Context, name string) (*countingFile, error) {
	f, err := os.Open(filepath.Join(d.path, name))
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	d.mu.Lock()
	d.opens[name]++
	d.mu.Unlock()
	return &countingFile{osFile: osFile{f, st.Size()}, d: d, name: name}, nil
}

type countingFile struct {
	osFile
	d    *dir
	name string
}

func (f *countingFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.File.ReadAt(p, off)
	f.d.mu.Lock()
	f.d.read[f.name] += int64(n)
	f.d.mu.Unlock()
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

// TestFiles checks every digest against the standard library and
// internal/xxh3's one-shot hash, for read sizes smaller and larger than the
// ranges, ranges that span reads, empty ranges, and gaps between ranges;
// and that each file is read once, whole.
func TestFiles(t *testing.T) {
	path := t.TempDir()
	rng := rand.New(rand.NewPCG(7, 7))
	sizes := []int{0, 1, 100, 4096, 70000}
	var jobs []Job
	contents := map[string][]byte{}
	for i, size := range sizes {
		b := make([]byte, size)
		for k := range b {
			b[k] = byte(rng.Uint32())
		}
		name := fmt.Sprintf("f%d", i)
		contents[name] = b
		if err := os.WriteFile(filepath.Join(path, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
		j := Job{Name: name, Size: int64(size), Want: Want{SHA256: true, GitSHA1: true}}
		// Ranges at random cut points, some empty, some with gaps.
		off := int64(0)
		for off < int64(size) {
			start := off + int64(rng.IntN(3))%max(1, int64(size)-off)
			end := min(int64(size), start+int64(rng.IntN(9000)))
			if rng.IntN(5) == 0 {
				end = start
			}
			j.Ranges = append(j.Ranges, Range{start, end})
			off = max(end, start+1)
		}
		j.Ranges = append(j.Ranges, Range{int64(size), int64(size)}) // an empty tensor at the end
		jobs = append(jobs, j)
	}
	for _, chunk := range []int{1, 7, 64, 1000, 4096, 1 << 20} {
		t.Run(fmt.Sprint("chunk ", chunk), func(t *testing.T) {
			d := newDir(path)
			results, err := Files(context.Background(), jobs, d.open, Options{Chunk: chunk, Workers: 2})
			if err != nil {
				t.Fatal(err)
			}
			for i, j := range jobs {
				b := contents[j.Name]
				r := results[i]
				if r.SHA256 != sha256.Sum256(b) || r.GitSHA1 != gitBlobSHA1(b) {
					t.Errorf("%s: digests differ from the standard library's", j.Name)
				}
				for k, rg := range j.Ranges {
					if want := xxh3.Hash(b[rg.Start:rg.End]); r.Ranges[k] != want {
						t.Errorf("%s: range %d [%d, %d): xxh3 %x, want %x", j.Name, k, rg.Start, rg.End, r.Ranges[k], want)
					}
				}
				if d.read[j.Name] != j.Size || (j.Size > 0 && d.opens[j.Name] != 1) {
					t.Errorf("%s: read %d bytes in %d opens; want %d in one", j.Name, d.read[j.Name], d.opens[j.Name], j.Size)
				}
			}
		})
	}
}

func TestFilesErrors(t *testing.T) {
	path := t.TempDir()
	os.WriteFile(filepath.Join(path, "short"), []byte("abc"), 0o644)
	ctx := context.Background()
	d := newDir(path)
	opt := Options{Path: func(name string) string { return filepath.Join(path, name) }, Changed: errChanged}
	_, err := Files(ctx, []Job{{Name: "short", Size: 10, Want: Want{SHA256: true}}}, d.open, opt)
	if !errors.Is(err, errChanged) || !strings.Contains(err.Error(), "short") {
		t.Errorf("a file that shrank: %v", err)
	}
	_, err = Files(ctx, []Job{{Name: "absent", Size: 1, Want: Want{SHA256: true}}}, d.open, opt)
	if err == nil || !strings.Contains(err.Error(), filepath.Join(path, "absent")) || strings.Count(err.Error(), "absent") != 1 {
		t.Errorf("a missing file: %v", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := Files(cancelled, []Job{{Name: "short", Size: 3, Want: Want{SHA256: true}}}, d.open, opt); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// TestSum checks the ends of one pass: a file that ends before its size
// (an *EndError at the byte it ended), and a reader's own error, which is
// said with the read that failed.
func TestSum(t *testing.T) {
	ctx := context.Background()
	h := NewHasher(4)
	_, err := h.Sum(ctx, strings.NewReader("abcdef"), 10, Want{SHA256: true}, nil)
	var ended *EndError
	if !errors.As(err, &ended) || ended.At != 6 {
		t.Errorf("a short input: %v, want it ended at byte 6", err)
	}
	failing := readerAtFunc(func([]byte, int64) (int, error) { return 0, iotest.ErrTimeout })
	if _, err := h.Sum(ctx, failing, 10, Want{SHA256: true}, nil); !errors.Is(err, iotest.ErrTimeout) || !strings.Contains(err.Error(), "reading 4 bytes at 0") || errors.As(err, &ended) {
		t.Errorf("a failing reader: %v", err)
	}
	unexpected := readerAtFunc(func([]byte, int64) (int, error) { return 0, io.ErrUnexpectedEOF })
	if _, err := h.Sum(ctx, unexpected, 10, Want{SHA256: true}, nil); errors.As(err, &ended) {
		t.Errorf("a reader's own unexpected EOF is not the input ending: %v", err)
	}
	got, err := h.Sum(ctx, strings.NewReader("abc"), 3, Want{SHA256: true}, nil)
	if err != nil || got.SHA256 != sha256.Sum256([]byte("abc")) {
		t.Errorf("reuse after an error: %v", err)
	}
}

func TestReadFull(t *testing.T) {
	r := strings.NewReader("abcdef")
	p := make([]byte, 4)
	if n, err := ReadFull(r, p, 2); n != 4 || err != nil || string(p) != "cdef" {
		t.Errorf("a read to the end: %d, %v, %q", n, err, p)
	}
	if n, err := ReadFull(r, p, 4); n != 2 || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("a read past the end: %d, %v", n, err)
	}
	if n, err := ReadFull(r, nil, 99); n != 0 || err != nil {
		t.Errorf("an empty read: %d, %v", n, err)
	}
}

type readerAtFunc func([]byte, int64) (int, error)

func (f readerAtFunc) ReadAt(p []byte, off int64) (int, error) { return f(p, off) }
