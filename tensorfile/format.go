package tensorfile

import (
	"errors"
	"io"
	"iter"
)

// A File is an open tensor file: its tensors and metadata. Its tensors'
// bytes are read from the io.ReaderAt it was opened over, at each
// TensorInfo's Offset.
type File interface {
	// NumTensors is how many tensors the file holds.
	NumTensors() int
	// TensorInfo returns tensor i, 0 <= i < NumTensors(), in the file's
	// order. Its Shape may share memory with the file: do not modify it.
	TensorInfo(i int) TensorInfo
	// Meta is the file's free-form metadata (safetensors' __metadata__),
	// or nil. Callers must not modify it.
	Meta() map[string]string
	// Close releases what opening the file took (nothing, for a file
	// opened over a caller's io.ReaderAt).
	Close() error
}

// Tensors ranges over f's tensors in the file's order.
func Tensors(f File) iter.Seq2[int, TensorInfo] {
	return func(yield func(int, TensorInfo) bool) {
		for i := range f.NumTensors() {
			if !yield(i, f.TensorInfo(i)) {
				return
			}
		}
	}
}

// A Format is one file format: how to recognise it and how to open it.
type Format interface {
	// Name is the format's registry name, e.g. "safetensors".
	Name() string
	// Extensions are the file name suffixes that say a file is of this
	// format, with their dot (".safetensors"). They are matched exactly.
	Extensions() []string
	// Sniff reports whether a file of size bytes that starts with prefix
	// looks like this format. prefix holds the first min(size, SniffLen)
	// bytes; Sniff must not assume more and must not read past it.
	Sniff(prefix []byte, size int64) bool
	// Open reads the file's header from r, which is size bytes long. On
	// error the File is nil and the error is the format's own (for
	// safetensors a *safetensors.FormatError with the reference's kind).
	Open(r io.ReaderAt, size int64) (File, error)
}

// SniffLen is how many leading bytes Identify and Detect's callers should
// pass to Sniff: enough for every registered format's magic.
const SniffLen = 64

// ErrUnknownFormat is returned when neither a file's name nor its first
// bytes say what format it is.
var ErrUnknownFormat = errors.New("tensorfile: unknown format")
