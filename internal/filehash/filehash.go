package filehash

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"strconv"

	"github.com/ckptcheck/ckptcheck/internal/xxh3"
)

// A Range is bytes [Start, End) of a file.
type Range struct{ Start, End int64 }

// Want says what one pass over a file computes.
type Want struct {
	// SHA256 and GitSHA1 ask for the file's digests; GitSHA1 is git's blob
	// id, the SHA-1 of "blob <size>\x00" and the bytes.
	SHA256, GitSHA1 bool
	// Ranges are the byte ranges (tensor data) whose xxh3-64 (seed 0) to
	// compute: in file order, non-overlapping.
	Ranges []Range
}

// Sums is what one pass over a file computed.
type Sums struct {
	SHA256  [sha256.Size]byte
	GitSHA1 [sha1.Size]byte
	// Ranges holds the xxh3-64 of each range asked for.
	Ranges []uint64
}

// DefaultChunk is the read size: large enough that a read costs little
// per byte, small enough that a chunk is still in the core's L2 cache when
// SHA-256 and xxh3 read it after the copy from the page cache.
const DefaultChunk = 256 << 10

// An EndError is a file that ended at byte At, before the size it was
// read for: it was truncated while it was read.
type EndError struct{ At int64 }

func (e *EndError) Error() string {
	return fmt.Sprintf("the file ended at byte %d, before its size", e.At)
}

// A Hasher is one reader's reusable state: its buffer and digests. It is
// not safe for concurrent use.
type Hasher struct {
	buf     []byte
	sha256  hash.Hash
	gitSHA1 hash.Hash
	xxh     *xxh3.Hasher
}

// NewHasher returns a Hasher reading chunk bytes at a time (DefaultChunk
// when chunk ≤ 0): its memory.
func NewHasher(chunk int) *Hasher {
	if chunk <= 0 {
		chunk = DefaultChunk
	}
	return &Hasher{buf: make([]byte, chunk), sha256: sha256.New(), gitSHA1: sha1.New(), xxh: xxh3.New()}
}

// Sum reads bytes [0, size) of r once, in order, and computes what w asks
// for. progress, if set, is called with the bytes each read added. A file
// that ends before size is an *EndError.
func (h *Hasher) Sum(ctx context.Context, r io.ReaderAt, size int64, w Want, progress func(int64)) (Sums, error) {
	out := Sums{Ranges: make([]uint64, len(w.Ranges))}
	h.sha256.Reset()
	h.gitSHA1.Reset()
	if w.GitSHA1 {
		h.gitSHA1.Write([]byte("blob " + strconv.FormatInt(size, 10) + "\x00"))
	}
	ri := 0            // the first range not finished
	streaming := false // Ranges[ri] has bytes in h.xxh
	for off := int64(0); off < size; {
		if err := ctx.Err(); err != nil {
			return Sums{}, err
		}
		end := min(off+int64(len(h.buf)), size)
		// End the chunk where a range that fits a chunk begins, so that it
		// is hashed in one call, without the streaming hasher's copy.
		for k := ri; k < len(w.Ranges) && w.Ranges[k].Start < end; k++ {
			if rg := w.Ranges[k]; rg.Start > off && rg.End > end && rg.End-rg.Start <= int64(len(h.buf)) {
				end = rg.Start
				break
			}
		}
		p := h.buf[:end-off]
		if n, err := ReadFull(r, p, off); err != nil {
			if errors.Is(err, errEnded) {
				return Sums{}, &EndError{At: off + int64(n)}
			}
			return Sums{}, fmt.Errorf("reading %d bytes at %d: %w", len(p), off, err)
		}
		if w.SHA256 {
			h.sha256.Write(p)
		}
		if w.GitSHA1 {
			h.gitSHA1.Write(p)
		}
		for ri < len(w.Ranges) && w.Ranges[ri].Start < end {
			rg := w.Ranges[ri]
			lo, hi := max(rg.Start, off), min(rg.End, end)
			whole := rg.Start >= off && rg.End <= end
			switch {
			case whole:
				out.Ranges[ri] = xxh3.Hash(p[lo-off : hi-off])
			default:
				if !streaming {
					h.xxh.Reset()
					streaming = true
				}
				h.xxh.Write(p[lo-off : hi-off])
			}
			if rg.End > end {
				break // continues in the next chunk
			}
			if !whole {
				out.Ranges[ri] = h.xxh.Sum64()
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
	for ; ri < len(w.Ranges); ri++ {
		out.Ranges[ri] = xxh3.Hash(nil)
	}
	h.sha256.Sum(out.SHA256[:0])
	h.gitSHA1.Sum(out.GitSHA1[:0])
	return out, nil
}

// errEnded marks a read that stopped short because the input ended; it
// reads as io.ErrUnexpectedEOF. A type, not fmt.Errorf, so that the
// package has no init to run when the command starts.
var errEnded error = endedError{}

type endedError struct{}

func (endedError) Error() string { return io.ErrUnexpectedEOF.Error() }
func (endedError) Unwrap() error { return io.ErrUnexpectedEOF }

// ReadFull reads len(p) bytes at off and returns how many it read. An
// input that ends first is an error satisfying
// errors.Is(err, io.ErrUnexpectedEOF); any other is the reader's.
// io.ReaderAt may report io.EOF along with a full read at the end of the
// input: that is no error.
func ReadFull(r io.ReaderAt, p []byte, off int64) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n, err := r.ReadAt(p, off)
	if n == len(p) {
		return n, nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		return n, errEnded
	}
	return n, err
}
