package quant

import (
	"errors"
	"fmt"
	"math/bits"

	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// Dims is the logical shape a codec decodes: Rows rows of Cols values,
// row-major. A 1-D tensor is one row; a stack of matrices ([experts, out,
// in]) is decoded matrix by matrix. Cols counts values: a complex element
// is two.
type Dims struct{ Rows, Cols uint64 }

// Values is Rows·Cols; ok is false when it overflows.
func (d Dims) Values() (n uint64, ok bool) {
	hi, lo := bits.Mul64(d.Rows, d.Cols)
	return lo, hi == 0
}

// A Tile is a codec's block, in values: row ranges passed to Spans and
// Decode start at a multiple of Rows and end at one, or at the last row
// (a partial last block). Cols is the block's width along a row; a codec
// whose layout needs whole column blocks says so through Sizes' error.
type Tile struct{ Rows, Cols uint64 }

// A Role says what a part holds.
type Role uint8

const (
	Data        Role = iota + 1 // the quantized values
	Scale                       // per-block (or per-channel, per-tensor) scales
	ZeroPoint                   // per-block zero points of asymmetric schemes
	GlobalScale                 // one scale over the tensor (NVFP4's weight_scale_2)
	Table                       // a code book (bitsandbytes' quant_map)
	Index                       // a group index per input column (GPTQ's g_idx)
	Meta                        // the layout written as a tensor (weight_shape, quant_state)
	InputScale                  // an activation scale stored beside the weight
)

var roleNames = [...]string{Data: "data", Scale: "scale", ZeroPoint: "zero_point", GlobalScale: "global_scale", Table: "table",
	Index: "index", Meta: "meta", InputScale: "input_scale"}

func (r Role) String() string {
	if int(r) < len(roleNames) && roleNames[r] != "" {
		return roleNames[r]
	}
	return fmt.Sprintf("Role(%d)", uint8(r))
}

// A Part is one of the byte arrays a codec decodes from: its role and the
// dtype its elements are stored as.
type Part struct {
	Role  Role
	DType tensorfile.DType
}

// A Span is Count runs of Len bytes of part Part, the first at byte Offset
// of the part and each Stride bytes after the previous (Stride is unused
// when Count is 1). A strided span is how a codec names a column range of
// a part stored transposed without one span per row.
type Span struct {
	Part                       int
	Offset, Len, Stride, Count uint64
}

// End is the offset just past the span's last byte; ok is false when it
// overflows.
func (s Span) End() (end uint64, ok bool) {
	if s.Count == 0 {
		return s.Offset, true
	}
	hi, lo := bits.Mul64(s.Count-1, s.Stride)
	end, c1 := bits.Add64(lo, s.Offset, 0)
	end, c2 := bits.Add64(end, s.Len, 0)
	return end, hi == 0 && c1 == 0 && c2 == 0
}

// Size is the number of bytes the span names, Count·Len; ok is false when
// it overflows.
func (s Span) Size() (n uint64, ok bool) {
	hi, lo := bits.Mul64(s.Count, s.Len)
	return lo, hi == 0
}

// A Codec decodes one encoding of a weight. Its methods are safe for
// concurrent use, take the weight's Dims on every call, and never allocate
// by them.
type Codec interface {
	// String names the encoding as inspect shows it ("F8_E4M3 per-tensor").
	String() string
	// Parts lists the codec's parts, in the order of Sizes, Spans' Part
	// and Decode's parts. Callers must not modify it.
	Parts() []Part
	// Tile is the codec's block.
	Tile() Tile
	// Sizes writes into sizes (len(Parts()) of them) the size in bytes of
	// each part of a weight of d, or returns an error when d is not a
	// shape of this encoding (overflow, columns not whole blocks).
	Sizes(d Dims, sizes []uint64) error
	// Spans appends to dst the spans that rows [r0, r1) of a weight of d
	// need, part by part in Parts' order, at most a few per part however
	// large d is. The range must be tile-aligned (see Tile) and non-empty.
	Spans(d Dims, r0, r1 uint64, dst []Span) ([]Span, error)
	// Decode decodes rows [r0, r1) of a weight of d into dst, which must
	// hold (r1-r0)·d.Cols values. parts[i] holds part i's bytes that
	// Spans names for this range, in span order, each span's runs one after
	// the other. Short parts or dst are an error, never a panic.
	Decode(d Dims, r0, r1 uint64, parts [][]byte, dst []float32) error
}

// ErrRange is wrapped by the errors of a row range a codec cannot serve:
// empty, past the last row, or not aligned to its tile.
var ErrRange = errors.New("row range not aligned to the codec's tile")

// CheckRange returns nil when [r0, r1) is a non-empty, tile-aligned range of
// d's rows: the check every codec's Spans and Decode start with.
func CheckRange(t Tile, d Dims, r0, r1 uint64) error {
	if r0 >= r1 || r1 > d.Rows || t.Rows == 0 || r0%t.Rows != 0 || (r1%t.Rows != 0 && r1 != d.Rows) {
		return fmt.Errorf("rows [%d, %d) of %d in tiles of %d: %w", r0, r1, d.Rows, t.Rows, ErrRange)
	}
	return nil
}

// Gather copies the bytes that spans name out of whole parts (full[i] is
// all of part i) into one buffer per part, appended to dst[i]: what a read
// scheduler does with files, done with memory. It is an error when a span
// leaves its part.
func Gather(full [][]byte, spans []Span, dst [][]byte) ([][]byte, error) {
	for len(dst) < len(full) {
		dst = append(dst, nil)
	}
	for _, s := range spans {
		if s.Part < 0 || s.Part >= len(full) {
			return dst, fmt.Errorf("span of part %d: the codec has %d parts", s.Part, len(full))
		}
		if end, ok := s.End(); !ok || end > uint64(len(full[s.Part])) {
			return dst, fmt.Errorf("span %+v runs past part %d's %d bytes", s, s.Part, len(full[s.Part]))
		}
		for i := range s.Count {
			off := s.Offset + i*s.Stride
			dst[s.Part] = append(dst[s.Part], full[s.Part][off:off+s.Len]...)
		}
	}
	return dst, nil
}

// need returns nil when n·size fits in have bytes, or an error naming c's
// what (an overflowing product never fits). The name is put together only
// on error: decoders call need on every range.
func need(c fmt.Stringer, what string, n, size uint64, have int) error {
	hi, lo := bits.Mul64(n, size)
	if hi != 0 || lo > uint64(have) {
		return fmt.Errorf("%s %s: %d values of %d bytes do not fit in %d bytes", c, what, n, size, have)
	}
	return nil
}
