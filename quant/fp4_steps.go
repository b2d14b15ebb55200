package quant

import "github.com/ckptcheck/ckptcheck/tensorfile"

// Steps of the E2M1 codecs (values.Stepper): the spacing of the E2M1 grid
// {0, 0.5, 1, 1.5, 2, 3, 4, 6} at each code — 2^(e−2) for exponent field
// e ≥ 1, 0.5 for the subnormal — times the block's scale (and NVFP4's
// global scale). The quantizers pick scales that keep amax within 6
// (triton_kernels' downcast_to_mxfp rounds amax/6 up to a power of two;
// NVFP4's block scale is amax/6 in E4M3), so no value is clamped beyond
// the top code's half step.

// e2m1Steps is the unscaled E2M1 spacing of every code.
var e2m1Steps = func() (t [16]float32) {
	for n := range t {
		t[n] = float32(uint32(1)<<max((n>>1)&3, 1)) / 4
	}
	return t
}()

// Steps writes the step of each value of rows [r0, r1).
func (c MXFP4) Steps(d Dims, r0, r1 uint64, parts [][]byte, dst []float32) error {
	e8m0Factors := e8m0FactorsTable()
	if err := c.Decode(d, r0, r1, parts, dst); err != nil {
		return err
	}
	n := (r1 - r0) * d.Cols
	blocks, scales := parts[0][:n/2], parts[1][:n/32]
	for k, e := range scales {
		f := e8m0Factors[e]
		out := dst[32*k : 32*k+32 : 32*k+32]
		for i, b := range blocks[16*k : 16*k+16 : 16*k+16] {
			out[2*i], out[2*i+1] = e2m1Steps[b&0xF]*f, e2m1Steps[b>>4]*f
		}
	}
	return nil
}

// Steps writes the step of each value of rows [r0, r1); compressed-tensors'
// BF16 store of the product widens it by twice that rounding.
func (c *NVFP4) Steps(d Dims, r0, r1 uint64, parts [][]byte, dst []float32) error {
	if err := c.Decode(d, r0, r1, parts, dst); err != nil {
		return err
	}
	n := (r1 - r0) * d.Cols
	g := floatAt(tensorfile.F32, parts[2], 0)
	t := f8Tables()[tensorfile.F8_E4M3]
	var u float32
	if c.divide {
		u = unitRoundoff(tensorfile.BF16)
	}
	data, scales := parts[0][:n/2], parts[1][:n/16]
	for k, sb := range scales {
		s := absf(t[sb] * g)
		if c.divide {
			s = absf(t[sb] / g)
		}
		out := dst[16*k : 16*k+16 : 16*k+16]
		for i, b := range data[8*k : 8*k+8 : 8*k+8] {
			out[2*i] = e2m1Steps[b&0xF]*s + 2*u*absf(out[2*i])
			out[2*i+1] = e2m1Steps[b>>4]*s + 2*u*absf(out[2*i+1])
		}
	}
	return nil
}
