package quant

import (
	"fmt"
	"math"
	"sync"

	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// MXFP4 is OCP MX FP4 as gpt-oss stores its experts: X_blocks U8 [..., rows,
// G, 16] (32 E2M1 values a block, two a byte, the low nibble first) beside
// X_scales U8 [..., rows, G] holding E8M0 exponents. Its logical Dims are
// the stored order, [rows (all leading dimensions folded), G·32], one scale
// per 32 values of a row: transformers' dequantized expert is the transpose
// of this ([E, G·32, rows]), which the value engine reads a band of logical
// rows at a time (ColumnSpans) and transposes in memory.
//
// value = FP4_VALUES[nibble] · 2^(scale−127) (huggingface/transformers
// src/transformers/integrations/mxfp4.py convert_moe_packed_tensors at
// 93a1c400417fd8e89db9f42f8b2265e97265d75a: torch.ldexp(lut[idx], scales −
// 127), which multiplies by torch.pow(2, e) in float32: exponent 255 is 2^128
// = +Inf, so a zero times it is NaN). The product is exact in float32 and in
// BF16, so no rounding mode matters.
type MXFP4 struct{}

var mxfp4Parts = []Part{{Data, tensorfile.U8}, {Scale, tensorfile.U8}}

// e2m1Values are the 16 FP4 (E2M1) values by nibble, sign bit 3: the table
// of transformers' FP4_VALUES, compressed-tensors' kE2M1ToFloat with its
// sign and ModelOpt's e2m1 values.
var e2m1Values = [16]float32{0, 0.5, 1, 1.5, 2, 3, 4, 6, float32(math.Copysign(0, -1)), -0.5, -1, -1.5, -2, -3, -4, -6}

// e8m0Factors are 2^(b−127) as float32, b = 255 being +Inf (torch.pow(2,
// 128) in float32), not the NaN of the OCP encoding.
var e8m0FactorsTable = sync.OnceValue(func() *[256]float32 {
	t := new([256]float32)
	for b := range 256 {
		t[b] = float32(math.Ldexp(1, b-127))
	}
	return t
})

func (MXFP4) String() string { return "MXFP4 (E2M1, E8M0 scale per 32)" }
func (MXFP4) Parts() []Part  { return mxfp4Parts }
func (MXFP4) Tile() Tile     { return Tile{Rows: 1, Cols: 32} }

func (c MXFP4) Sizes(d Dims, sizes []uint64) error {
	if d.Cols%32 != 0 {
		return fmt.Errorf("%s: %d values a row are not whole blocks of 32", c, d.Cols)
	}
	n, ok := d.Values()
	if !ok {
		return fmt.Errorf("%s: %d × %d values overflow", c, d.Rows, d.Cols)
	}
	if len(sizes) < 2 {
		return fmt.Errorf("%s: sizes for %d parts, want 2", c, len(sizes))
	}
	sizes[0], sizes[1] = n/2, n/32
	return nil
}

func (c MXFP4) Spans(d Dims, r0, r1 uint64, dst []Span) ([]Span, error) {
	var sizes [2]uint64
	if err := c.Sizes(d, sizes[:]); err != nil {
		return dst, err
	}
	if err := checkRows(c, d, r0, r1); err != nil {
		return dst, err
	}
	return append(dst, rowsSpan(0, r0, r1, d.Cols/2), rowsSpan(1, r0, r1, d.Cols/32)), nil
}

func (c MXFP4) Decode(d Dims, r0, r1 uint64, parts [][]byte, dst []float32) error {
	e8m0Factors := e8m0FactorsTable()
	var buf [2]Span
	spans, err := c.Spans(d, r0, r1, buf[:0])
	if err != nil {
		return err
	}
	n := (r1 - r0) * d.Cols
	if err := checkParts(c, spans, parts, dst, n); err != nil {
		return err
	}
	blocks, scales := parts[0][:n/2], parts[1][:n/32]
	for k, e := range scales {
		f := e8m0Factors[e]
		out := dst[32*k : 32*k+32 : 32*k+32]
		for i, b := range blocks[16*k : 16*k+16 : 16*k+16] {
			out[2*i] = e2m1Values[b&0xF] * f
			out[2*i+1] = e2m1Values[b>>4] * f
		}
	}
	return nil
}

// ColumnSpans appends the spans holding columns [c0, c1) of every row of a
// weight of d, c0 and c1 multiples of 32: one strided run a part. What they
// hold, part by part, is a weight of Dims{d.Rows, c1 − c0}, which Decode
// and Steps read as is. gpt-oss's logical experts are the transpose of the
// stored rows, so a band of logical rows is such a band of columns.
func (c MXFP4) ColumnSpans(d Dims, c0, c1 uint64, dst []Span) ([]Span, error) {
	var sizes [2]uint64
	if err := c.Sizes(d, sizes[:]); err != nil {
		return dst, err
	}
	if c0 >= c1 || c1 > d.Cols || c0%32 != 0 || c1%32 != 0 {
		return dst, fmt.Errorf("%s: columns [%d, %d) of %d: %w", c, c0, c1, d.Cols, ErrRange)
	}
	return append(dst, Span{Part: 0, Offset: c0 / 2, Len: (c1 - c0) / 2, Stride: d.Cols / 2, Count: d.Rows},
		Span{Part: 1, Offset: c0 / 32, Len: (c1 - c0) / 32, Stride: d.Cols / 32, Count: d.Rows}), nil
}
