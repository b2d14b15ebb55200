package quant

import (
	"fmt"
	"math/bits"

	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// Plain returns the codec of a plain, decodable dtype (every dtype but the
// sub-byte F4 and F6 types, which compare bit for bit): one Data part, tile
// 1 row, decoded by DecodeFloat64 and rounded to float32. C64's values are
// its (real, imaginary) pairs, so its Dims.Cols is twice its elements per
// row and must be even. Integers above 2^24 and F64 round to float32; the
// value engine's exact comparisons of plain dtypes do not go through here.
func Plain(d tensorfile.DType) (Codec, bool) {
	if !d.Decodable() {
		return nil, false
	}
	return &plainCodecs[d], true
}

var plainCodecs = func() (t [tensorfile.U64 + 1]plainCodec) {
	for _, d := range tensorfile.DTypes() {
		t[d] = plainCodec{d: d, parts: [1]Part{{Data, d}}}
	}
	return t
}()

type plainCodec struct {
	d     tensorfile.DType
	parts [1]Part
}

func (c *plainCodec) String() string { return c.d.String() }
func (c *plainCodec) Parts() []Part  { return c.parts[:] }
func (c *plainCodec) Tile() Tile     { return Tile{Rows: 1, Cols: uint64(c.d.Lanes())} }

// rowBytes is the size of one row of d, or an error when d is no shape of
// this dtype.
func (c *plainCodec) rowBytes(d Dims) (uint64, error) {
	lanes := uint64(c.d.Lanes())
	if d.Cols%lanes != 0 {
		return 0, fmt.Errorf("%s: %d values a row are not whole elements of %d values", c, d.Cols, lanes)
	}
	hi, row := bits.Mul64(d.Cols/lanes, uint64(c.d.Bits()/8))
	hi2, _ := bits.Mul64(d.Rows, row)
	if hi != 0 || hi2 != 0 {
		return 0, fmt.Errorf("%s: %d × %d values overflow", c, d.Rows, d.Cols)
	}
	return row, nil // an element has at least as many bytes as values: Rows·Cols fits too
}

func (c *plainCodec) Sizes(d Dims, sizes []uint64) error {
	row, err := c.rowBytes(d)
	if err != nil {
		return err
	}
	if len(sizes) < 1 {
		return fmt.Errorf("%s: sizes for no part", c)
	}
	sizes[0] = d.Rows * row // rowBytes checked the product
	return nil
}

func (c *plainCodec) Spans(d Dims, r0, r1 uint64, dst []Span) ([]Span, error) {
	row, err := c.check(d, r0, r1)
	if err != nil {
		return dst, err
	}
	return append(dst, Span{Part: 0, Offset: r0 * row, Len: (r1 - r0) * row, Count: 1}), nil
}

func (c *plainCodec) Decode(d Dims, r0, r1 uint64, parts [][]byte, dst []float32) error {
	row, err := c.check(d, r0, r1)
	if err != nil {
		return err
	}
	if len(parts) != 1 {
		return fmt.Errorf("%s: %d parts, want 1", c, len(parts))
	}
	n, size := (r1-r0)*d.Cols, (r1-r0)*row // bounded by rowBytes' check
	if size > uint64(len(parts[0])) {
		return fmt.Errorf("%s: rows [%d, %d) need %d bytes, the part has %d", c, r0, r1, size, len(parts[0]))
	}
	if n > uint64(len(dst)) {
		return fmt.Errorf("%s: rows [%d, %d) are %d values, the output holds %d", c, r0, r1, n, len(dst))
	}
	// Through a small float64 buffer, so that decoding allocates nothing.
	var buf [512]float64
	src, out := parts[0][:size], dst[:n]
	elem, lanes := c.d.Bits()/8, c.d.Lanes()
	for len(out) > 0 {
		m := min(len(out), len(buf)) / lanes
		k := DecodeFloat64(c.d, src[:m*elem], buf[:])
		for i, v := range buf[:k] {
			out[i] = float32(v)
		}
		src, out = src[m*elem:], out[k:]
	}
	return nil
}

func (c *plainCodec) check(d Dims, r0, r1 uint64) (row uint64, err error) {
	if row, err = c.rowBytes(d); err != nil {
		return 0, err
	}
	if err := CheckRange(c.Tile(), d, r0, r1); err != nil {
		return 0, fmt.Errorf("%s: %w", c, err)
	}
	return row, nil
}
