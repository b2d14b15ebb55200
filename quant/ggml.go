package quant

import (
	"encoding/binary"
	"fmt"
	"math/bits"

	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// GGML returns the codec of a GGML block encoding as GGUF stores it: one
// Data part of whole blocks, each carrying its own scales, decoded bit for
// bit as ggml's dequantize_row_* does (ggml/src/ggml-quants.c). Where ggml
// rounds a float product before adding to it, the decoders convert to
// float32 explicitly, so that no platform fuses the multiply-add. ok is
// false for an encoding with no decoder (Q8_1, Q8_K, the IQ and TQ types).
func GGML(e tensorfile.Encoding) (Codec, bool) {
	c, ok := ggmlCodecs[e]
	if !ok {
		return nil, false
	}
	if steps, ok := ggmlSteps[e]; ok {
		return &ggmlStepped{c, steps, ggmlFused[e]}, true
	}
	return c, true
}

// A ggmlBlock decodes one block's bytes into its values.
type ggmlBlock func(b []byte, y []float32)

var ggmlCodecs = map[tensorfile.Encoding]*ggmlCodec{}

// registerGGML makes decode the decoder of e; each type's file calls it.
func registerGGML(e tensorfile.Encoding, decode ggmlBlock) bool {
	ggmlCodecs[e] = &ggmlCodec{e: e, block: e.Block(), decode: decode, name: "ggml:" + e.String()}
	return true
}

// ggmlCodec is a GGML block type: rows of Cols values, each row whole
// blocks of block.Elements values in block.Bytes bytes.
type ggmlCodec struct {
	e      tensorfile.Encoding
	block  tensorfile.Block
	decode ggmlBlock
	name   string
}

var ggmlParts = []Part{{Data, tensorfile.U8}}

func (c *ggmlCodec) String() string { return c.name }
func (c *ggmlCodec) Parts() []Part  { return ggmlParts }
func (c *ggmlCodec) Tile() Tile     { return Tile{Rows: 1, Cols: c.block.Elements} }

// rowBytes is the size of one row of d, or an error when d is no shape of
// this encoding.
func (c *ggmlCodec) rowBytes(d Dims) (uint64, error) {
	if d.Cols%c.block.Elements != 0 {
		return 0, fmt.Errorf("%s: rows of %d values are not whole blocks of %d", c, d.Cols, c.block.Elements)
	}
	row := d.Cols / c.block.Elements * c.block.Bytes // Bytes < Elements·8: no overflow for Cols < 2^64
	if hi, _ := bits.Mul64(d.Rows, row); hi != 0 || d.Cols/c.block.Elements > ^uint64(0)/c.block.Bytes {
		return 0, fmt.Errorf("%s: %d × %d values overflow", c, d.Rows, d.Cols)
	}
	if _, ok := d.Values(); !ok {
		return 0, fmt.Errorf("%s: %d × %d values overflow", c, d.Rows, d.Cols)
	}
	return row, nil
}

func (c *ggmlCodec) Sizes(d Dims, sizes []uint64) error {
	row, err := c.rowBytes(d)
	if err != nil {
		return err
	}
	if len(sizes) < 1 {
		return fmt.Errorf("%s: sizes for no part", c)
	}
	sizes[0] = d.Rows * row
	return nil
}

func (c *ggmlCodec) check(d Dims, r0, r1 uint64) (uint64, error) {
	row, err := c.rowBytes(d)
	if err != nil {
		return 0, err
	}
	if err := CheckRange(c.Tile(), d, r0, r1); err != nil {
		return 0, fmt.Errorf("%s: %w", c, err)
	}
	return row, nil
}

func (c *ggmlCodec) Spans(d Dims, r0, r1 uint64, dst []Span) ([]Span, error) {
	row, err := c.check(d, r0, r1)
	if err != nil {
		return dst, err
	}
	return append(dst, Span{Part: 0, Offset: r0 * row, Len: (r1 - r0) * row, Count: 1}), nil
}

// ColumnSpans appends the span holding columns [c0, c1) of every row of a
// weight of d, c0 and c1 multiples of the block: one strided run of whole
// blocks. Each block carries its own scales, so what the run holds is a
// weight of Dims{d.Rows, c1 − c0} of this encoding, which Decode and Steps
// read as is (gpt-oss's ffn_down_exps is stored as the transpose of the
// HF expert, so a band of its logical rows is such a band of columns).
func (c *ggmlCodec) ColumnSpans(d Dims, c0, c1 uint64, dst []Span) ([]Span, error) {
	row, err := c.rowBytes(d)
	if err != nil {
		return dst, err
	}
	en, bn := c.block.Elements, c.block.Bytes
	if c0 >= c1 || c1 > d.Cols || c0%en != 0 || c1%en != 0 {
		return dst, fmt.Errorf("%s: columns [%d, %d) of %d: %w", c, c0, c1, d.Cols, ErrRange)
	}
	return append(dst, Span{Part: 0, Offset: c0 / en * bn, Len: (c1 - c0) / en * bn, Stride: row, Count: d.Rows}), nil
}

func (c *ggmlCodec) Decode(d Dims, r0, r1 uint64, parts [][]byte, dst []float32) error {
	return c.eachBlock(d, r0, r1, parts, 0, ^uint64(0), dst, c.decode)
}

// DecodeRange writes values [lo, hi) of rows [r0, r1), counted from row
// r0's first (whole blocks), into dst[:hi-lo]; this encoding says no
// steps, so steps must be nil.
func (c *ggmlCodec) DecodeRange(d Dims, r0, r1 uint64, parts [][]byte, lo, hi uint64, dst, steps []float32) error {
	if steps != nil {
		return fmt.Errorf("%s: no steps", c)
	}
	return c.eachBlock(d, r0, r1, parts, lo, hi, dst, c.decode)
}

// eachBlock runs f on every block of values [lo, hi) of rows [r0, r1)
// (hi = ^0: to the rows' end), its values' slice of dst beside it, after
// checking that parts and dst hold them.
func (c *ggmlCodec) eachBlock(d Dims, r0, r1 uint64, parts [][]byte, lo, hi uint64, dst []float32, f ggmlBlock) error {
	src, blocks, err := c.blockRange(d, r0, r1, parts, lo, hi, dst)
	if err != nil {
		return err
	}
	bn, en := c.block.Bytes, c.block.Elements
	for i := range blocks {
		f(src[i*bn:(i+1)*bn], dst[i*en:(i+1)*en])
	}
	return nil
}

// blockRange checks that parts and dst hold the blocks of values [lo, hi)
// of rows [r0, r1) (hi = ^0: to the rows' end), and returns their bytes
// and how many they are.
func (c *ggmlCodec) blockRange(d Dims, r0, r1 uint64, parts [][]byte, lo, hi uint64, dst []float32) ([]byte, uint64, error) {
	row, err := c.check(d, r0, r1)
	if err != nil {
		return nil, 0, err
	}
	if len(parts) != 1 {
		return nil, 0, fmt.Errorf("%s: %d parts, want 1", c, len(parts))
	}
	n := (r1 - r0) * d.Cols // bounded by Rows·Cols, checked
	if hi == ^uint64(0) {
		hi = n
	}
	if err := checkValueRange(c, n, lo, hi, c.block.Elements); err != nil {
		return nil, 0, err
	}
	if err := need(c, "data", r1-r0, row, len(parts[0])); err != nil {
		return nil, 0, err
	}
	en, bn := c.block.Elements, c.block.Bytes
	blocks := (hi - lo) / en
	if err := need(c, "output", blocks, en, len(dst)); err != nil {
		return nil, 0, err
	}
	return parts[0][lo/en*bn:], blocks, nil
}

// f16At is the IEEE half at b[0:2] as float32 (GGML_FP16_TO_FP32).
func f16At(b []byte) float32 { return F16ToFloat32(binary.LittleEndian.Uint16(b)) }
