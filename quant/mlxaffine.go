package quant

import (
	"fmt"

	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// MLXAffine is MLX's affine quantization as mlx-lm saves it (config.json
// "quantization": {"group_size", "bits"}): weight U32 [rows, cols·bits/32]
// (code c of a row at bit (c mod pack)·bits of word c/pack) beside scales
// and biases [rows, cols/group] of the model's dtype T. value = scale · q +
// bias with each operation rounded to T, as mlx's dequantize computes it
// (ml-explore/mlx mlx/ops.cpp dequantize at
// fc96f021d7fd3ac34ce25d74e8da07593ea72d3d: w_full = multiply(w_full,
// scales); w_full = add(w_full, biases), each an op of dtype T). 2, 4 and 8
// bits; mlx's 3, 5 and 6 pack across words and are not decoded.
type MLXAffine struct {
	bits, pack, group uint64
	parts             []Part
}

// NewMLXAffine returns the codec of bits-bit codes in groups of group with
// scales and biases of dtype t.
func NewMLXAffine(bits, group uint64, t tensorfile.DType) (*MLXAffine, error) {
	pack, err := packBits("mlx affine", bits)
	if err != nil {
		return nil, err
	}
	if group == 0 || group%pack != 0 || floatSize(t) < 2 {
		return nil, fmt.Errorf("mlx affine: group %d of %d-bit codes, %s scales", group, bits, t)
	}
	return &MLXAffine{bits, pack, group, []Part{{Data, tensorfile.U32}, {Scale, t}, {ZeroPoint, t}}}, nil
}

func (c *MLXAffine) String() string { return fmt.Sprintf("MLX affine int%d g%d", c.bits, c.group) }
func (c *MLXAffine) Parts() []Part  { return c.parts }
func (c *MLXAffine) Tile() Tile     { return Tile{Rows: 1, Cols: c.group} }

func (c *MLXAffine) geometry(d Dims) (groups uint64, sizes [3]uint64, err error) {
	if d.Cols%c.group != 0 {
		return 0, sizes, fmt.Errorf("%s: %d values a row are not whole groups", c, d.Cols)
	}
	groups = d.Cols / c.group
	var ok [3]bool
	sizes[0], ok[0] = mul3(d.Rows, d.Cols/c.pack, 4)
	sizes[1], ok[1] = mul3(d.Rows, groups, floatSize(c.parts[1].DType))
	sizes[2], ok[2] = sizes[1], ok[1]
	if _, okv := d.Values(); !okv || !ok[0] || !ok[1] {
		return 0, sizes, fmt.Errorf("%s: %d × %d values overflow", c, d.Rows, d.Cols)
	}
	return groups, sizes, nil
}

func (c *MLXAffine) Sizes(d Dims, sizes []uint64) error {
	_, s, err := c.geometry(d)
	if err != nil {
		return err
	}
	if len(sizes) < 3 {
		return fmt.Errorf("%s: sizes for %d parts, want 3", c, len(sizes))
	}
	copy(sizes, s[:])
	return nil
}

func (c *MLXAffine) Spans(d Dims, r0, r1 uint64, dst []Span) ([]Span, error) {
	groups, _, err := c.geometry(d)
	if err != nil {
		return dst, err
	}
	if err := checkRows(c, d, r0, r1); err != nil {
		return dst, err
	}
	es := floatSize(c.parts[1].DType)
	return append(dst, rowsSpan(0, r0, r1, d.Cols/c.pack*4), rowsSpan(1, r0, r1, groups*es), rowsSpan(2, r0, r1, groups*es)), nil
}

func (c *MLXAffine) Decode(d Dims, r0, r1 uint64, parts [][]byte, dst []float32) error {
	return c.decode(d, r0, r1, parts, dst, false)
}

// Steps writes the step of each value of rows [r0, r1): its group's scale,
// widened by twice the roundings to T of the product and the sum.
func (c *MLXAffine) Steps(d Dims, r0, r1 uint64, parts [][]byte, dst []float32) error {
	return c.decode(d, r0, r1, parts, dst, true)
}

// decode writes the values of rows [r0, r1) or, when steps, their steps.
func (c *MLXAffine) decode(d Dims, r0, r1 uint64, parts [][]byte, dst []float32, steps bool) error {
	var buf [3]Span
	spans, err := c.Spans(d, r0, r1, buf[:0])
	if err != nil {
		return err
	}
	n := (r1 - r0) * d.Cols
	if err := checkParts(c, spans, parts, dst, n); err != nil {
		return err
	}
	t, wpg := c.parts[1].DType, c.group/c.pack
	var lut [256]float32
	for k := range n / c.group { // group k of the range, row-major
		s, b := floatAt(t, parts[1], k), floatAt(t, parts[2], k)
		for q := range lut[:1<<c.bits] {
			p := float32(float32(q) * s) // rounded before the add: no fused multiply-add
			lut[q] = roundTo(t, roundTo(t, p)+b)
			if steps {
				lut[q] = affineStep(s, roundTo(t, p), t) + 2*unitRoundoff(t)*absf(lut[q])
			}
		}
		out := dst[k*c.group : (k+1)*c.group]
		for i := range wpg {
			unpackWord(out[i*c.pack:], word(parts[0], k*wpg+i), c.bits, c.pack, &lut)
		}
	}
	return nil
}
