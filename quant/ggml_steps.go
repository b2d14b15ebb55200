package quant

import (
	"math"

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
	tensorfile.Q8_0: stepsQ8_0,
	tensorfile.Q4_0: stepsQ4_0,
	tensorfile.Q4_K: stepsQ4K,
}

// halfULP is the relative rounding of a float32 scale to a half.
const halfULP = 1.0 / 2048

// ggmlStepped is a GGML codec that says its steps (values.Stepper).
type ggmlStepped struct {
	*ggmlCodec
	steps ggmlBlock
}

// Steps writes the step of each value of rows [r0, r1), from the bytes
// Decode reads.
func (c *ggmlStepped) Steps(d Dims, r0, r1 uint64, parts [][]byte, dst []float32) error {
	return c.eachBlock(d, r0, r1, parts, dst, c.steps)
}

// ErrorCompensated says the K-quants are judged statistically: their
// quantizers (make_qkx2_quants, make_qx_quants) search scales and mins and
// refit them by least squares after rounding, which moves values beyond
// half a step of the final grid.
func (c *ggmlStepped) ErrorCompensated() bool {
	return c.e == tensorfile.Q4_K
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
	d := abs32(f16At(b))
	y = y[:32]
	for j, q := range b[2:34] {
		y[j] = d + twiceAbsInt8[q]*d*halfULP
	}
}

// twiceAbsInt8 is 2|q| of each int8 q by its byte.
var twiceAbsInt8 = func() (t [256]float32) {
	for i := range t {
		t[i] = 2 * float32(math.Abs(float64(int8(i))))
	}
	return t
}()

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
		s := step(d*float32(sc), 15)
		for i := range 32 {
			y[32*j+i] = s
		}
	}
}
