package verify

import (
	"cmp"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"runtime"
	"slices"
	"strconv"
	"sync"

	"github.com/zeebo/xxh3"

	"github.com/ckptcheck/ckptcheck/checkpoint"
)

// Hashing reads whole files once, start to end, and is the second reader
// of the package beside the read scheduler (readsched.go), which serves
// value comparison's scattered spans. Each file is read by one worker in
// chunks small enough to stay in the core's cache while every digest of
// the file consumes them; workers take files, largest first, so that two
// shards keep two cores busy. Memory is one chunk per worker.

// A byteRange is bytes [start, end) of a file.
type byteRange struct{ start, end int64 }

// A hashJob is one file to read once and what to compute over it.
type hashJob struct {
	name string
	size int64
	// sha256 and gitSHA1 ask for the file's digests.
	sha256, gitSHA1 bool
	// ranges are the byte ranges (tensor data) whose xxh3-64 to compute:
	// in file order, non-overlapping.
	ranges []byteRange
}

// A hashResult is what one pass over a file computed.
type hashResult struct {
	sha256  [sha256.Size]byte
	gitSHA1 [sha1.Size]byte
	// ranges holds the xxh3-64 of each range of the job.
	ranges []uint64
}

// hashOptions tune hashFiles.
type hashOptions struct {
	// workers is how many files are read at once; 0 means GOMAXPROCS.
	workers int
	// chunk is the read size; 0 means defaultChunk.
	chunk int
	// progress, if set, is called with the bytes each read added; from
	// several goroutines.
	progress func(n int64)
}

// defaultChunk is the read size: large enough that a read costs little
// per byte, small enough that a chunk is still in the core's L2 cache when
// SHA-256 and xxh3 read it after the copy from the page cache.
const defaultChunk = 256 << 10

// hashFiles reads every job's file through src once and returns what each
// asked for, in the jobs' order. A file that cannot be read, or that holds
// fewer bytes than its size, is an error naming it.
func hashFiles(ctx context.Context, src checkpoint.Source, jobs []hashJob, opt hashOptions) ([]hashResult, error) {
	results := make([]hashResult, len(jobs))
	workers := opt.workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	chunk := opt.chunk
	if chunk <= 0 {
		chunk = defaultChunk
	}
	// Largest files first: the last file to start is then a small one.
	order := make([]int, len(jobs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(jobs[b].size, jobs[a].size) })
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, len(jobs)) {
		wg.Go(func() {
			h := newFileHasher(chunk)
			for i := range next {
				if ctx.Err() != nil {
					continue
				}
				r, err := h.hash(ctx, src, &jobs[i], opt.progress)
				if err != nil {
					cancel(err)
					continue
				}
				results[i] = r
			}
		})
	}
	for _, i := range order {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	return results, nil
}

// A fileHasher is one worker's reusable state.
type fileHasher struct {
	buf     []byte
	sha256  hash.Hash
	gitSHA1 hash.Hash
	xxh     *xxh3.Hasher
}

func newFileHasher(chunk int) *fileHasher {
	return &fileHasher{buf: make([]byte, chunk), sha256: sha256.New(), gitSHA1: sha1.New(), xxh: xxh3.New()}
}

func (h *fileHasher) hash(ctx context.Context, src checkpoint.Source, j *hashJob, progress func(int64)) (hashResult, error) {
	f, err := src.Open(ctx, j.name)
	if err != nil {
		return hashResult{}, fmt.Errorf("%s: %w", src.Path(j.name), unwrapPath(err))
	}
	defer f.Close()
	size := j.size
	if f.Size() != size {
		return hashResult{}, fmt.Errorf("%s: %w (size %d → %d)", src.Path(j.name), checkpoint.ErrChanged, size, f.Size())
	}
	r := hashResult{ranges: make([]uint64, len(j.ranges))}
	h.sha256.Reset()
	h.gitSHA1.Reset()
	if j.gitSHA1 {
		h.gitSHA1.Write([]byte("blob " + strconv.FormatInt(size, 10) + "\x00"))
	}
	ri := 0            // the first range not finished
	streaming := false // ranges[ri] has bytes in h.xxh
	for off := int64(0); off < size; {
		if err := ctx.Err(); err != nil {
			return hashResult{}, err
		}
		end := min(off+int64(len(h.buf)), size)
		// End the chunk where a range that fits a chunk begins, so that it
		// is hashed in one call, without the streaming hasher's copy.
		for k := ri; k < len(j.ranges) && j.ranges[k].start < end; k++ {
			if rg := j.ranges[k]; rg.start > off && rg.end > end && rg.end-rg.start <= int64(len(h.buf)) {
				end = rg.start
				break
			}
		}
		p := h.buf[:end-off]
		if err := readFull(f, p, off); err != nil {
			return hashResult{}, fmt.Errorf("%s: %w", src.Path(j.name), err)
		}
		if j.sha256 {
			h.sha256.Write(p)
		}
		if j.gitSHA1 {
			h.gitSHA1.Write(p)
		}
		for ri < len(j.ranges) && j.ranges[ri].start < end {
			rg := j.ranges[ri]
			lo, hi := max(rg.start, off), min(rg.end, end)
			whole := rg.start >= off && rg.end <= end
			switch {
			case whole:
				r.ranges[ri] = xxh3.Hash(p[lo-off : hi-off])
			default:
				if !streaming {
					h.xxh.Reset()
					streaming = true
				}
				h.xxh.Write(p[lo-off : hi-off])
			}
			if rg.end > end {
				break // continues in the next chunk
			}
			if !whole {
				r.ranges[ri] = h.xxh.Sum64()
				streaming = false
			}
			ri++
		}
		if progress != nil {
			progress(end - off)
		}
		off = end
	}
	// Empty ranges at the end of the file (zero-size tensors) hash nothing.
	for ; ri < len(j.ranges); ri++ {
		r.ranges[ri] = xxh3.Hash(nil)
	}
	h.sha256.Sum(r.sha256[:0])
	h.gitSHA1.Sum(r.gitSHA1[:0])
	return r, nil
}

// readFull reads len(p) bytes at off; a short read is the file ending
// early (truncated while it was read).
func readFull(r io.ReaderAt, p []byte, off int64) error {
	n, err := r.ReadAt(p, off)
	if n == len(p) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: the file ended at byte %d, before its size", checkpoint.ErrChanged, off+int64(n))
	}
	return fmt.Errorf("reading %d bytes at %d: %w", len(p), off, err)
}

// unwrapPath drops an *fs.PathError's path, which the caller names.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
