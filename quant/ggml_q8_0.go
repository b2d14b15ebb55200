package quant

import (
	"encoding/binary"

	"github.com/ckptcheck/ckptcheck/tensorfile"
)

var _ = registerGGML(tensorfile.Q8_0, decodeQ8_0)

// decodeQ8_0 is dequantize_row_q8_0: block_q8_0 {half d; int8 qs[32]},
// y = qs·d.
func decodeQ8_0(b []byte, y []float32) {
	if q8Scaled(b[:34], y, nil) {
		return
	}
	q8Blocks(b[:34], y, nil)
}

// q8Blocks decodes the Q8_0 blocks of src into y and, unless steps is
// nil, their steps (stepsQ8_0's) into steps, in one pass, four codes at a
// time. Every product is exact in float32 (an int8 times a half, 2|q|
// times a half times 2⁻¹¹), so taking d·2⁻¹¹ once a block, or fusing the
// step's multiply-add, changes no bit.
func q8Blocks(src []byte, y, steps []float32) {
	f16, twiceAbsInt8 := f16Table(), twiceAbsInt8Table()
	for i := range len(src) / 34 {
		b := (*[34]byte)(src[34*i:])
		d := f16[binary.LittleEndian.Uint16(b[:])]
		qs, out := (*[32]byte)(b[2:]), (*[32]float32)(y[32*i:])
		if steps == nil {
			for j := 0; j < 32; j += 4 {
				out[j], out[j+1] = float32(int8(qs[j]))*d, float32(int8(qs[j+1]))*d
				out[j+2], out[j+3] = float32(int8(qs[j+2]))*d, float32(int8(qs[j+3]))*d
			}
			continue
		}
		st := (*[32]float32)(steps[32*i:])
		ad := abs32(d)
		adh := ad * halfULP
		for j := 0; j < 32; j += 4 {
			q0, q1, q2, q3 := qs[j], qs[j+1], qs[j+2], qs[j+3]
			out[j], out[j+1] = float32(int8(q0))*d, float32(int8(q1))*d
			out[j+2], out[j+3] = float32(int8(q2))*d, float32(int8(q3))*d
			st[j], st[j+1] = ad+twiceAbsInt8[q0]*adh, ad+twiceAbsInt8[q1]*adh
			st[j+2], st[j+3] = ad+twiceAbsInt8[q2]*adh, ad+twiceAbsInt8[q3]*adh
		}
	}
}
