package quant

import (
	"encoding/binary"
	"math"
	"sync"

	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// Steps of the F8_E4M3 codecs (values.Stepper): the spacing of the E4M3
// grid at each stored byte — 2^(e−10) for exponent field e ≥ 1, 2^−9 for
// the subnormals (ml_dtypes' float8_e4m3fn: 4 exponent bits of bias 7, 3
// mantissa bits) — times the scale of the value's tensor, row or block.
// Round to nearest leaves the source within half of it; at a binade's
// lower edge the grid below is finer, so the spacing above bounds both
// sides. A product stored in a 16-bit dtype (ChannelFP8) is rounded once
// more, and the step is widened by twice that rounding.

// e4m3Steps is the unscaled E4M3 spacing of every byte.
var e4m3StepsTable = sync.OnceValue(func() *[256]float32 {
	t := new([256]float32)
	for b := range t {
		t[b] = float32(math.Ldexp(1, max(int(b>>3)&0xF, 1)-10))
	}
	return t
})

// unitRoundoff is the relative rounding of a float32 product stored in d.
func unitRoundoff(d tensorfile.DType) float32 {
	switch d {
	case tensorfile.BF16:
		return 1.0 / 256
	case tensorfile.F16:
		return 1.0 / 2048
	}
	return 0
}

// absf is |v| in float32.
func absf(v float32) float32 { return math.Float32frombits(math.Float32bits(v) &^ (1 << 31)) }

// Steps writes the step of each value of rows [r0, r1).
func (c ScaledFP8) Steps(d Dims, r0, r1 uint64, parts [][]byte, dst []float32) error {
	e4m3Steps := e4m3StepsTable()
	if err := c.Decode(d, r0, r1, parts, dst); err != nil {
		return err
	}
	scale := absf(math.Float32frombits(binary.LittleEndian.Uint32(parts[1])))
	for i, b := range parts[0][:(r1-r0)*d.Cols] {
		dst[i] = e4m3Steps[b] * scale
	}
	return nil
}

// Steps writes the step of each value of rows [r0, r1).
func (c *BlockFP8) Steps(d Dims, r0, r1 uint64, parts [][]byte, dst []float32) error {
	return c.decode(d, r0, r1, parts, nil, dst)
}

// Steps writes the step of each value of rows [r0, r1).
func (c *ChannelFP8) Steps(d Dims, r0, r1 uint64, parts [][]byte, dst []float32) error {
	e4m3Steps := e4m3StepsTable()
	if err := c.Decode(d, r0, r1, parts, dst); err != nil {
		return err
	}
	sd := c.parts[1].DType
	u := unitRoundoff(sd)
	for r := range r1 - r0 {
		i := r
		if c.perTensor {
			i = 0
		}
		s := absf(floatAt(sd, parts[1], i))
		out := dst[r*d.Cols : (r+1)*d.Cols]
		for k, b := range parts[0][r*d.Cols : (r+1)*d.Cols] {
			out[k] = e4m3Steps[b]*s + 2*u*absf(out[k])
		}
	}
	return nil
}
