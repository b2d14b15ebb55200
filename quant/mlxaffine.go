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
	return c.decodeRange(d, r0, r1, parts, 0, (r1-r0)*d.Cols, dst, nil)
}

// Steps writes the step of each value of rows [r0, r1): its group's scale,
// widened by twice the roundings to T of the product and the sum.
func (c *MLXAffine) Steps(d Dims, r0, r1 uint64, parts [][]byte, dst []float32) error {
	return c.decodeRange(d, r0, r1, parts, 0, (r1-r0)*d.Cols, nil, dst)
}

// DecodeSteps writes the values of rows [r0, r1) into dst and their steps
// into steps, in one pass.
func (c *MLXAffine) DecodeSteps(d Dims, r0, r1 uint64, parts [][]byte, dst, steps []float32) error {
	return c.decodeRange(d, r0, r1, parts, 0, (r1-r0)*d.Cols, dst, steps)
}

// DecodeRange writes values [lo, hi) of rows [r0, r1), counted from row
// r0's first (whole groups), into dst[:hi-lo] and their steps into
// steps[:hi-lo] unless steps is nil: what DecodeSteps writes there, a
// piece at a time.
func (c *MLXAffine) DecodeRange(d Dims, r0, r1 uint64, parts [][]byte, lo, hi uint64, dst, steps []float32) error {
	return c.decodeRange(d, r0, r1, parts, lo, hi, dst, steps)
}

// decodeRange writes values [lo, hi) of rows [r0, r1) into vals and their
// steps into steps, each unless nil, from their first: group by group
// (the groups of the rows are row-major, as their values), each group's
// tables filled once for both.
func (c *MLXAffine) decodeRange(d Dims, r0, r1 uint64, parts [][]byte, lo, hi uint64, vals, steps []float32) error {
	var buf [3]Span
	spans, err := c.Spans(d, r0, r1, buf[:0])
	if err != nil {
		return err
	}
	if err := checkValueRange(c, (r1-r0)*d.Cols, lo, hi, c.group); err != nil {
		return err
	}
	if err := checkOutputs(c, spans, parts, vals, steps, hi-lo); err != nil {
		return err
	}
	t, wpg := c.parts[1].DType, c.group/c.pack
	var luts affineLUTs
	for k := lo / c.group; k*c.group < hi; k++ { // group k of the range, row-major
		c.fill(&luts, floatAt(t, parts[1], k), floatAt(t, parts[2], k), t, steps != nil)
		at, i := k*c.group-lo, uint64(0)
		if c.bits == 4 {
			i = unpack4Strided(vals, steps, at, parts[0][4*k*wpg:], 4, wpg, &luts)
			unpack4Words(vals, steps, at+i*c.pack, parts[0][4*(k*wpg+i):], 4, wpg-i, &luts)
			i = wpg
		}
		for ; i < wpg; i++ {
			luts.unpack(vals, steps, at+i*c.pack, word(parts[0], k*wpg+i), c.bits, c.pack)
		}
	}
	return nil
}

// fill fills a group's tables for scale s and bias b of dtype t: each
// code's value and, when steps, its step.
func (c *MLXAffine) fill(l *affineLUTs, s, b float32, t tensorfile.DType, steps bool) {
	if c.bits == 4 && mlxFill16(l, s, b, t, steps) {
		return
	}
	if t == tensorfile.BF16 { // the loop below with the rounding inline
		for q := range 1 << c.bits {
			p := roundBF16(float32(float32(q) * s)) // rounded before the add: no fused multiply-add
			v := roundBF16(p + b)
			l.vals[q] = v
			if steps {
				l.steps[q] = affineStep(s, p, tensorfile.BF16) + 2*unitRoundoff(tensorfile.BF16)*absf(v)
			}
		}
		return
	}
	for q := range 1 << c.bits {
		p := roundTo(t, float32(float32(q)*s)) // rounded before the add: no fused multiply-add
		v := roundTo(t, p+b)
		l.vals[q] = v
		if steps {
			l.steps[q] = affineStep(s, p, t) + 2*unitRoundoff(t)*absf(v)
		}
	}
}
