package quant

import (
	"fmt"

	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// ChannelFP8 is compressed-tensors' float-quantized F8_E4M3 with one scale
// a row ("channel" strategy, weight_scale [rows, 1]) or one for the tensor
// ("tensor", weight_scale [1]), the scale in F32, BF16 or F16. Its value is
// forward.py's _dequantize: x_q.to(scale.dtype) * scale, which torch
// computes in float32 and rounds to the scale's dtype (vllm-project/
// compressed-tensors src/compressed_tensors/quantization/lifecycle/forward.py
// at 01dd1a58d39e47c617df54aaa4519a30273be0c5). An F8 value times a 16-bit
// scale is exact in float32, so the one rounding is the store.
type ChannelFP8 struct {
	perTensor bool
	parts     [2]Part
}

// NewChannelFP8 returns the codec with scales of dtype scale, one a row or,
// when perTensor, one in all.
func NewChannelFP8(scale tensorfile.DType, perTensor bool) (*ChannelFP8, error) {
	if floatSize(scale) < 2 {
		return nil, fmt.Errorf("F8_E4M3 with %s scales: not a scale dtype of compressed-tensors", scale)
	}
	return &ChannelFP8{perTensor, [2]Part{{Data, tensorfile.F8_E4M3}, {Scale, scale}}}, nil
}

func (c *ChannelFP8) String() string {
	if c.perTensor {
		return fmt.Sprintf("F8_E4M3 per-tensor (%s scale)", c.parts[1].DType)
	}
	return fmt.Sprintf("F8_E4M3 per-channel (%s scale)", c.parts[1].DType)
}
func (c *ChannelFP8) Parts() []Part { return c.parts[:] }
func (c *ChannelFP8) Tile() Tile    { return Tile{Rows: 1, Cols: 1} }

func (c *ChannelFP8) Sizes(d Dims, sizes []uint64) error {
	n, ok := d.Values()
	if !ok {
		return fmt.Errorf("%s: %d × %d values overflow", c, d.Rows, d.Cols)
	}
	if len(sizes) < 2 {
		return fmt.Errorf("%s: sizes for %d parts, want 2", c, len(sizes))
	}
	es := floatSize(c.parts[1].DType)
	sizes[0], sizes[1] = n, es
	if !c.perTensor {
		s, ok := mul(d.Rows, es)
		if !ok {
			return fmt.Errorf("%s: %d rows overflow", c, d.Rows)
		}
		sizes[1] = s
	}
	return nil
}

func (c *ChannelFP8) Spans(d Dims, r0, r1 uint64, dst []Span) ([]Span, error) {
	var sizes [2]uint64
	if err := c.Sizes(d, sizes[:]); err != nil {
		return dst, err
	}
	if err := checkRows(c, d, r0, r1); err != nil {
		return dst, err
	}
	es := floatSize(c.parts[1].DType)
	scale := whole(1, es)
	if !c.perTensor {
		scale = rowsSpan(1, r0, r1, es)
	}
	return append(dst, rowsSpan(0, r0, r1, d.Cols), scale), nil
}

func (c *ChannelFP8) Decode(d Dims, r0, r1 uint64, parts [][]byte, dst []float32) error {
	var buf [2]Span
	spans, err := c.Spans(d, r0, r1, buf[:0])
	if err != nil {
		return err
	}
	if err := checkParts(c, spans, parts, dst, (r1-r0)*d.Cols); err != nil {
		return err
	}
	t, sd := f8Tables()[tensorfile.F8_E4M3], c.parts[1].DType
	var lut [256]float32 // every byte's value under the row's scale
	for r := range r1 - r0 {
		if r == 0 || !c.perTensor {
			s := floatAt(sd, parts[1], r)
			if c.perTensor {
				s = floatAt(sd, parts[1], 0)
			}
			for b, v := range t {
				lut[b] = roundTo(sd, v*s)
			}
		}
		out := dst[r*d.Cols : (r+1)*d.Cols]
		for i, b := range parts[0][r*d.Cols : (r+1)*d.Cols] {
			out[i] = lut[b]
		}
	}
	return nil
}
