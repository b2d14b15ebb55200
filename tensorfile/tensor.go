package tensorfile

import (
	"math/bits"
	"strconv"
)

// TensorInfo is what every format says about a tensor: its name, its
// dtype, its row-major shape and where its bytes are in the file.
type TensorInfo struct {
	Name  string
	DType DType
	// Encoding is the tensor's block encoding (a GGUF tensor of GGML type
	// Q4_K), or 0 for a tensor of plain DType elements. An encoded tensor's
	// DType is U8, its Shape counts logical elements, and its Size is whole
	// blocks of Encoding.Block().
	Encoding Encoding
	Shape    []uint64
	// Offset and Size are the tensor's bytes in the file: an absolute
	// offset from the file's first byte, and a length.
	Offset, Size int64
}

// NumElements is the product of the shape (1 for a scalar). ok is false
// when the product overflows 64 bits.
func (t TensorInfo) NumElements() (n uint64, ok bool) { return NumElements(t.Shape) }

// NumElements is the product of shape (1 for a scalar). ok is false when
// the product overflows 64 bits.
func NumElements(shape []uint64) (n uint64, ok bool) {
	n = 1
	for _, d := range shape {
		hi, lo := bits.Mul64(n, d)
		if hi != 0 {
			return 0, false
		}
		n = lo
	}
	return n, true
}

// FormatShape writes a shape as "[151936, 2560]"; a scalar is "[]".
func FormatShape(shape []uint64) string {
	b := []byte{'['}
	for i, d := range shape {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = strconv.AppendUint(b, d, 10)
	}
	return string(append(b, ']'))
}
