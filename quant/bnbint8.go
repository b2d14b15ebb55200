package quant

import (
	"fmt"

	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// Int8Rowwise is bitsandbytes' LLM.int8() weight: weight I8 [rows, cols]
// beside SCB F32 [rows], the absolute maximum of each row. value = w ·
// SCB[row] · 7.874015718698502e-3 (1/127 as a float32 constant), two float32
// roundings, exactly as int8_vectorwise_dequant computes A * stats.view(-1,
// 1) * 7.874015718698502e-3 — "we divide by 127, or multiply by the
// reciprocal" (bitsandbytes-foundation/bitsandbytes bitsandbytes/
// functional.py at 95f9af309d4d5793847169c39288dcd3fcbdf564; transformers'
// dequantize_bnb_weight calls it).
type Int8Rowwise struct{}

var int8RowwiseParts = []Part{{Data, tensorfile.I8}, {Scale, tensorfile.F32}}

// inv127 is the float32 torch multiplies by: a Python float scalar is
// rounded to the tensor's dtype.
var inv127 = float32(7.874015718698502e-3)

func (Int8Rowwise) String() string { return "int8 row-wise (LLM.int8)" }
func (Int8Rowwise) Parts() []Part  { return int8RowwiseParts }
func (Int8Rowwise) Tile() Tile     { return Tile{Rows: 1, Cols: 1} }

func (c Int8Rowwise) Sizes(d Dims, sizes []uint64) error {
	n, ok := d.Values()
	s, ok2 := mul(d.Rows, 4)
	if !ok || !ok2 {
		return fmt.Errorf("%s: %d × %d values overflow", c, d.Rows, d.Cols)
	}
	if len(sizes) < 2 {
		return fmt.Errorf("%s: sizes for %d parts, want 2", c, len(sizes))
	}
	sizes[0], sizes[1] = n, s
	return nil
}

func (c Int8Rowwise) Spans(d Dims, r0, r1 uint64, dst []Span) ([]Span, error) {
	var sizes [2]uint64
	if err := c.Sizes(d, sizes[:]); err != nil {
		return dst, err
	}
	if err := checkRows(c, d, r0, r1); err != nil {
		return dst, err
	}
	return append(dst, rowsSpan(0, r0, r1, d.Cols), rowsSpan(1, r0, r1, 4)), nil
}

func (c Int8Rowwise) Decode(d Dims, r0, r1 uint64, parts [][]byte, dst []float32) error {
	var buf [2]Span
	spans, err := c.Spans(d, r0, r1, buf[:0])
	if err != nil {
		return err
	}
	if err := checkParts(c, spans, parts, dst, (r1-r0)*d.Cols); err != nil {
		return err
	}
	for r := range r1 - r0 {
		s := floatAt(tensorfile.F32, parts[1], r)
		out := dst[r*d.Cols : (r+1)*d.Cols]
		for i, b := range parts[0][r*d.Cols : (r+1)*d.Cols] {
			out[i] = float32(float32(int8(b))*s) * inv127
		}
	}
	return nil
}
