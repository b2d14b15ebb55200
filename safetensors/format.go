package safetensors

import (
	"encoding/binary"
	"io"

	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// The safetensors format registers itself with tensorfile, so that linking
// this package is what makes .safetensors files readable through the
// registry.
func init() { tensorfile.Register(format{}) }

// Name is the format's name in the tensorfile registry.
const Name = "safetensors"

var extensions = []string{".safetensors"}

type format struct{}

func (format) Name() string { return Name }

// Extensions returns a fresh slice: the registry's callers may keep it.
func (format) Extensions() []string { return append([]string(nil), extensions...) }

// Sniff accepts what starts like a safetensors file: a little-endian
// header length that the reference would accept for this size, then a JSON
// object. It decides only for files whose name does not say their format;
// a file that sniffs as safetensors may still fail NewFile.
func (format) Sniff(prefix []byte, size int64) bool {
	if len(prefix) < 9 || size < 10 {
		return false
	}
	n := binary.LittleEndian.Uint64(prefix)
	if n < 2 || n > MaxHeaderSize || n > uint64(size)-8 {
		return false
	}
	for _, c := range prefix[8:min(uint64(len(prefix)), 8+n)] {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		case '{':
			return true
		}
		return false
	}
	return false
}

func (format) Open(r io.ReaderAt, size int64) (tensorfile.File, error) {
	f, err := NewFile(r, size)
	if err != nil {
		return nil, err // an untyped nil File, never a nil *File in it
	}
	return f, nil
}

// A *File is a tensorfile.File.
var _ tensorfile.File = (*File)(nil)

// NumTensors is len(f.Tensors).
func (f *File) NumTensors() int { return len(f.Tensors) }

// TensorInfo returns tensor i in the format-neutral form, its byte range
// absolute in the file (and, like (*Tensor).Open, never outside the data
// section).
func (f *File) TensorInfo(i int) tensorfile.TensorInfo {
	t := f.Tensors[i]
	off, n := f.clamp(t.DataOffsets[0], t.Size())
	return tensorfile.TensorInfo{Name: t.Name, DType: t.DType, Shape: t.Shape, Offset: off, Size: n}
}

// Meta is f.Metadata.
func (f *File) Meta() map[string]string { return f.Metadata }
