package quant

import "github.com/ckptcheck/ckptcheck/tensorfile"

var _ = registerGGML(tensorfile.Q6_K, decodeQ6K)

// decodeQ6K is dequantize_row_q6_K: block_q6_K {uint8 ql[128]; uint8
// qh[64]; int8 scales[16]; half d}, 6-bit values (low 4 bits in ql, high 2
// in qh) minus 32, times d·scale rounded before the multiply by q.
func decodeQ6K(b []byte, y []float32) {
	d := f16At(b[208:])
	for n := range 2 {
		ql, qh, sc := b[64*n:64*n+64], b[128+32*n:128+32*n+32], b[192+8*n:192+8*n+8]
		out := y[128*n : 128*n+128]
		for l := range 32 {
			is := l / 16
			q1 := int(ql[l]&0xF|((qh[l]>>0)&3)<<4) - 32
			q2 := int(ql[l+32]&0xF|((qh[l]>>2)&3)<<4) - 32
			q3 := int(ql[l]>>4|((qh[l]>>4)&3)<<4) - 32
			q4 := int(ql[l+32]>>4|((qh[l]>>6)&3)<<4) - 32
			out[l] = float32(d*float32(int8(sc[is]))) * float32(q1)
			out[l+32] = float32(d*float32(int8(sc[is+2]))) * float32(q2)
			out[l+64] = float32(d*float32(int8(sc[is+4]))) * float32(q3)
			out[l+96] = float32(d*float32(int8(sc[is+6]))) * float32(q4)
		}
	}
}
