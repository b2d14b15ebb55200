package quant

import (
	"encoding/binary"
	"math"
	"sync"

	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// Steps of the GGML encodings: for each value, the spacing of the grid
// llama-quantize rounded it to (quantize_row_*_ref in ggml-quants.c), so
// that a faithful conversion lies within half a step of its source. Each
// block's scale is itself stored as a half, rounded from the float32 the
// quantizer divided by: a value q·d may then sit |q|·d·2⁻¹¹ further off,
// and the step is widened by twice that.

// ggmlSteps are the encodings whose steps are known, by the block function
// that writes them.
var ggmlSteps = map[tensorfile.Encoding]ggmlBlock{
	tensorfile.Q8_0:  stepsQ8_0,
	tensorfile.Q4_0:  stepsQ4_0,
	tensorfile.Q4_1:  stepsQ4_1,
	tensorfile.Q5_0:  stepsQ5_0,
	tensorfile.Q5_1:  stepsQ5_1,
	tensorfile.Q2_K:  stepsQ2K,
	tensorfile.Q3_K:  stepsQ3K,
	tensorfile.Q4_K:  stepsQ4K,
	tensorfile.Q5_K:  stepsQ5K,
	tensorfile.Q6_K:  stepsQ6K,
	tensorfile.MXFP4: stepsMXFP4,
}

// halfULP is the relative rounding of a float32 scale to a half.
const halfULP = 1.0 / 2048

// ggmlStepped is a GGML codec that says its steps (values.Stepper).
type ggmlStepped struct {
	*ggmlCodec
	steps ggmlBlock
	fused ggmlFusedBlock // nil: decode and steps block by block
}

// Steps writes the step of each value of rows [r0, r1), from the bytes
// Decode reads.
func (c *ggmlStepped) Steps(d Dims, r0, r1 uint64, parts [][]byte, dst []float32) error {
	return c.eachBlock(d, r0, r1, parts, 0, ^uint64(0), dst, c.steps)
}

// DecodeRange writes values [lo, hi) of rows [r0, r1), counted from row
// r0's first (whole blocks), into dst[:hi-lo] and their steps into
// steps[:hi-lo] unless steps is nil.
func (c *ggmlStepped) DecodeRange(d Dims, r0, r1 uint64, parts [][]byte, lo, hi uint64, dst, steps []float32) error {
	return c.decodeSteps(d, r0, r1, parts, lo, hi, dst, steps)
}

// Decode decodes rows [r0, r1) a range at a time (see decodeSteps).
func (c *ggmlStepped) Decode(d Dims, r0, r1 uint64, parts [][]byte, dst []float32) error {
	return c.DecodeRange(d, r0, r1, parts, 0, ^uint64(0), dst, nil)
}

// decodeSteps is DecodeRange of values and, unless steps is nil, their
// steps, in one pass over the range's blocks: Q8_0's and Q4_K's the vector
// loops' when the CPU has them, the others' each block's values and steps
// together (ggmlFused).
func (c *ggmlStepped) decodeSteps(d Dims, r0, r1 uint64, parts [][]byte, lo, hi uint64, dst, steps []float32) error {
	src, blocks, err := c.blockRange(d, r0, r1, parts, lo, hi, dst)
	if err != nil {
		return err
	}
	bn, en := c.block.Bytes, c.block.Elements
	if steps != nil {
		if err := need(c, "steps", blocks, en, len(steps)); err != nil {
			return err
		}
	}
	if blocks == 0 {
		return nil
	}
	src = src[:blocks*bn]
	switch c.e {
	case tensorfile.Q8_0:
		if !q8Scaled(src, dst, steps) {
			q8Blocks(src, dst, steps)
		}
		return nil
	case tensorfile.Q4_K:
		if !q4kBlocks(src, dst, steps) {
			q4kGo(src, dst, steps)
		}
		return nil
	}
	if c.fused != nil {
		c.fused(src, dst, steps)
		return nil
	}
	for i := range blocks {
		b, y := src[i*bn:(i+1)*bn], dst[i*en:(i+1)*en]
		c.decode(b, y)
		if steps != nil {
			c.steps(b, steps[i*en:(i+1)*en])
		}
	}
	return nil
}

// ErrorCompensated says the K-quants are judged statistically: their
// quantizers (make_qkx2_quants, make_qx_quants, make_q3_quants) search
// scales and mins and refit them by least squares after rounding, which
// moves values beyond half a step of the final grid.
func (c *ggmlStepped) ErrorCompensated() bool {
	switch c.e {
	case tensorfile.Q2_K, tensorfile.Q3_K, tensorfile.Q4_K, tensorfile.Q5_K, tensorfile.Q6_K:
		return true
	}
	return false
}

// step is the spacing d of a grid q·d, widened for d's rounding to a half.
func step(d float32, q int) float32 {
	d = float32(math.Abs(float64(d)))
	return d + 2*float32(math.Abs(float64(q)))*d*halfULP
}

// stepsQ8_0: quantize_row_q8_0_ref rounds x/d to the nearest of q·d,
// d = amax/127. step(d, q), with |d| taken once a block and 2|q| from a
// table.
func stepsQ8_0(b []byte, y []float32) {
	twiceAbsInt8 := twiceAbsInt8Table()
	d := abs32(f16At(b))
	y = y[:32]
	for j, q := range b[2:34] {
		y[j] = d + twiceAbsInt8[q]*d*halfULP
	}
}

// twiceAbsInt8 is 2|q| of each int8 q by its byte.
var twiceAbsInt8Table = sync.OnceValue(func() *[256]float32 {
	t := new([256]float32)
	for i := range t {
		t[i] = 2 * float32(math.Abs(float64(int8(i))))
	}
	return t
})

// abs32 is |v|, by clearing the sign bit.
func abs32(v float32) float32 { return math.Float32frombits(math.Float32bits(v) &^ (1 << 31)) }

// stepsQ4_0: quantize_row_q4_0_ref takes d = max/−8 of the value of
// largest magnitude and truncates x/d + 8.5 to at most 15: values round to
// (q−8)·d, except that the top code 15 (7·d) also holds the values up to
// 8·d that the clamp caught, a cell of half-width d.
func stepsQ4_0(b []byte, y []float32) {
	d := f16At(b)
	for j, q := range b[2:18] {
		for k, n := range [2]int{int(q & 0xF), int(q >> 4)} {
			s := step(d, n-8)
			if n == 15 {
				s *= 2
			}
			y[j+16*k] = s
		}
	}
}

// stepsQ4K: dequantize_row_q4_K's grid in sub-block j is (d·scⱼ)·q − dmin·mⱼ:
// its spacing is d·scⱼ (the 6-bit scale is exact; d is a half).
func stepsQ4K(b []byte, y []float32) {
	d := f16At(b)
	scales := b[4:16]
	for j := range 8 {
		sc, _ := scaleMinK4(j, scales)
		s, out := step(d*float32(sc), 15), y[32*j:32*j+32]
		for i := range out {
			out[i] = s
		}
	}
}

// stepsQ4_1: quantize_row_q4_1_ref takes d = (max−min)/15, m = min and
// rounds (x−m)/d half up to q·d + m, no clamp reached: the step is d,
// widened for d's and m's rounding to halves.
func stepsQ4_1(b []byte, y []float32) {
	d, m := f16At(b), abs32(f16At(b[2:]))
	for j, q := range b[4:20] {
		y[j] = step(d, int(q&0xF)) + 2*m*halfULP
		y[j+16] = step(d, int(q>>4)) + 2*m*halfULP
	}
}

// stepsQ5_0: quantize_row_q5_0_ref as Q4_0 with 5 bits: d = max/−16,
// q = min(31, trunc(x/d + 16.5)); the top code 31 (15·d) also holds the
// values up to 16·d the clamp caught.
func stepsQ5_0(b []byte, y []float32) {
	d := f16At(b)
	qh := binary.LittleEndian.Uint32(b[2:])
	for j, q := range b[6:22] {
		for k, n := range [2]int{int(q&0xF | byte((qh>>uint(j))<<4)&0x10), int(q>>4 | byte(qh>>uint(j+12))&0x10)} {
			s := step(d, n-16)
			if n == 31 {
				s *= 2
			}
			y[j+16*k] = s
		}
	}
}

// stepsQ5_1: quantize_row_q5_1_ref as Q4_1 with 5 bits (d = (max−min)/31).
func stepsQ5_1(b []byte, y []float32) {
	d, m := f16At(b), abs32(f16At(b[2:]))
	qh := binary.LittleEndian.Uint32(b[4:])
	for j, q := range b[8:24] {
		y[j] = step(d, int(q&0xF|byte((qh>>uint(j))<<4)&0x10)) + 2*m*halfULP
		y[j+16] = step(d, int(q>>4|byte(qh>>uint(j+12))&0x10)) + 2*m*halfULP
	}
}

// fillSubBlocks writes, for each sub-block i of n values, the step
// s(i) to its values.
func fillSubBlocks(y []float32, n int, s func(i int) float32) {
	for i := range len(y) / n {
		v := s(i)
		for k := range n {
			y[n*i+k] = v
		}
	}
}

// stepsQ2K: dequantize_row_q2_K's grid in sub-block i (16 values) is
// (d·scᵢ)·q − dmin·mᵢ, q < 4: spacing d·scᵢ.
func stepsQ2K(b []byte, y []float32) {
	d := f16At(b[80:])
	fillSubBlocks(y[:256], 16, func(i int) float32 { return step(d*float32(b[i]&0xF), 3) })
}

// stepsQ3K: dequantize_row_q3_K's grid in sub-block i (16 values) is
// (d·(scᵢ−32))·q, −4 ≤ q < 4: spacing |d·(scᵢ−32)|.
func stepsQ3K(b []byte, y []float32) {
	d := f16At(b[108:])
	scales := q3KScales(b)
	fillSubBlocks(y[:256], 16, func(i int) float32 { return step(d*float32(int(scales[i])-32), 4) })
}

// stepsQ5K: as Q4_K, with 5-bit values.
func stepsQ5K(b []byte, y []float32) {
	d := f16At(b)
	scales := b[4:16]
	fillSubBlocks(y[:256], 32, func(i int) float32 {
		sc, _ := scaleMinK4(i, scales)
		return step(d*float32(sc), 31)
	})
}

// stepsQ6K: dequantize_row_q6_K's grid in sub-block i (16 values) is
// (d·scᵢ)·(q−32): spacing |d·scᵢ|.
func stepsQ6K(b []byte, y []float32) {
	d := f16At(b[208:])
	sc := b[192:208]
	fillSubBlocks(y[:256], 16, func(i int) float32 { return step(d*float32(int8(sc[i])), 32) })
}

// mxfp4Steps are the steps of the E2M1 grid (ggml's doubled kvalues 0, 1,
// 2, 3, 4, 6, 8, 12) by the magnitude code: twice the larger half-gap
// beside each level. quantize_row_mxfp4_ref picks d = 2^(⌊log₂ amax⌋−3),
// so |x|/d < 16 and the top level 12 also holds values up to 16.
var mxfp4Steps = [8]float32{1, 1, 1, 1, 2, 2, 4, 8}

// stepsMXFP4: best_index_mxfp4 rounds x to the nearest kvalue·d; d is a
// power of two, stored exactly.
func stepsMXFP4(b []byte, y []float32) {
	d := e8m0Half(b[0])
	for j, q := range b[1:17] {
		y[j] = mxfp4Steps[q&7] * d
		y[j+16] = mxfp4Steps[q>>4&7] * d
	}
}
