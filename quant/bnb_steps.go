package quant

import "github.com/ckptcheck/ckptcheck/tensorfile"

// Steps of the bitsandbytes codecs (values.Stepper).
//
// LLM.int8 rounds w·127/SCB to the nearest integer: a uniform grid of
// spacing SCB/127.
//
// NF4 and FP4 are non-uniform grids: quantize_4bit picks the code nearest
// x/absmax, so a value's cell reaches halfway to each neighbouring code
// value, and its step is the larger distance to a neighbour, times absmax.
// Under double quantization absmax is itself rounded to the nested map (to
// within half of that map's step there, times nested_absmax), which moves
// a value by |code| times that much; and a 16-bit store of the value rounds
// once more. Both widen the step by twice their size.

// Steps writes the step of each value of rows [r0, r1): SCB[row]/127.
func (c Int8Rowwise) Steps(d Dims, r0, r1 uint64, parts [][]byte, dst []float32) error {
	if err := c.Decode(d, r0, r1, parts, dst); err != nil {
		return err
	}
	for r := range r1 - r0 {
		s := absf(floatAt(tensorfile.F32, parts[1], r)) * inv127
		for i := range dst[r*d.Cols : (r+1)*d.Cols] {
			dst[r*d.Cols+uint64(i)] = s
		}
	}
	return nil
}

// bnbSteps are a Steps call's unscaled grid steps: the 16 codes', and the
// nested map's (under double quantization).
type bnbSteps struct {
	code   [16]float32
	nested [256]float32
}

func (st *bnbSteps) init(c *BNB4, parts [][]byte) {
	neighbourSteps(c.code[:], st.code[:])
	if c.nested {
		var m [256]float32
		for i := range m {
			m[i] = floatAt(tensorfile.F32, parts[3], uint64(i))
		}
		neighbourSteps(m[:], st.nested[:])
	}
}

// block turns a block's values lut (absmax a, its nested rounding's step
// da) into their steps.
func (st *bnbSteps) block(c *BNB4, lut *[16]float32, a, da float32) {
	u := unitRoundoff(c.out)
	for i, v := range c.code {
		lut[i] = st.code[i]*absf(a) + absf(v)*da + 2*u*absf(lut[i])
	}
}

// neighbourSteps writes for each value of grid the larger distance to the
// nearest distinct value below and above it (the one there is at an end;
// 0 for a grid of one value).
func neighbourSteps(grid, dst []float32) {
	for i, v := range grid {
		var below, above float32
		for _, w := range grid {
			if w < v && (below == 0 || v-w < below) {
				below = v - w
			}
			if w > v && (above == 0 || w-v < above) {
				above = w - v
			}
		}
		dst[i] = max(below, above)
	}
}
