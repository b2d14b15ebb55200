package wholefile

import (
	"fmt"
	"io"
	"os"
	"slices"
)

// A Limit names a kind of file, for errors, and caps its size in bytes.
type Limit struct {
	// Kind is how errors name the file before its path: a flag
	// ("--policy") or a description ("merge input"); may be empty.
	Kind string
	// Max is the largest size accepted, in bytes.
	Max int64
}

// A Reader reads an opened file up to its cap; reading past the cap is an
// ErrTooLarge error.
type Reader struct {
	f     *os.File
	path  string
	limit Limit
	size  int64
	rest  io.LimitedReader // the cap plus one byte, which proves the file too large
	err   error            // sticky: once over the cap, always
}

// Open opens path for reading whole under limit: a regular file no larger
// than limit.Max.
func Open(path string, limit Limit) (*Reader, error) {
	// Look before opening: opening a device can have effects of its own
	// (a terminal, a tape, a watchdog).
	fi, err := os.Stat(path)
	if err != nil {
		return nil, limit.fail(path, err)
	}
	if err := limit.regular(path, fi); err != nil {
		return nil, err
	}
	f, err := openNoBlock(path)
	if err != nil {
		return nil, limit.fail(path, err)
	}
	// The file opened, not the name looked at: the path may have changed
	// in between.
	if fi, err = f.Stat(); err == nil {
		err = limit.regular(path, fi)
	} else {
		err = limit.fail(path, err)
	}
	if err == nil && fi.Size() > limit.Max {
		err = &Error{Kind: limit.Kind, Path: path, Err: ErrTooLarge,
			Detail: fmt.Sprintf("file is larger than %s (%s bytes)", FormatSize(limit.Max), thousands(fi.Size()))}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	r := &Reader{f: f, path: path, limit: limit, size: fi.Size()}
	r.rest = io.LimitedReader{R: f, N: limit.Max + 1}
	return r, nil
}

// ReadFile reads the regular file at path whole, refusing it when it is
// larger than limit.Max.
func ReadFile(path string, limit Limit) ([]byte, error) {
	r, err := Open(path, limit)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return r.ReadAll()
}

// Size is the file's size when it was opened.
func (r *Reader) Size() int64 { return r.size }

// Read reads from the file; past the cap it returns ErrTooLarge's error.
func (r *Reader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	n, err := r.rest.Read(p)
	if r.rest.N <= 0 {
		// The byte past the cap was read: drop it and refuse the file.
		r.err = &Error{Kind: r.limit.Kind, Path: r.path, Err: ErrTooLarge,
			Detail: "file is larger than " + FormatSize(r.limit.Max)}
		return max(n-1, 0), r.err
	}
	if err != nil && err != io.EOF {
		err = r.limit.fail(r.path, err)
	}
	return n, err
}

// ReadAll reads the rest of the file. Its buffer starts at the file's size
// (plus the byte that finds the end) and grows, if the file has grown, by
// doubling up to the cap.
func (r *Reader) ReadAll() ([]byte, error) {
	b := make([]byte, 0, min(r.size, r.limit.Max)+1)
	for {
		if len(b) == cap(b) {
			// len(b) <= Max here: Read never returns more.
			b = slices.Grow(b, int(min(int64(cap(b)), r.limit.Max+1-int64(len(b)))))
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// Close closes the file.
func (r *Reader) Close() error { return r.f.Close() }
