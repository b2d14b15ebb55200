package quant

import "github.com/ckptcheck/ckptcheck/tensorfile"

var _ = registerGGML(tensorfile.Q5_K, decodeQ5K)

// decodeQ5K is dequantize_row_q5_K: block_q5_K {half d, dmin; uint8
// scales[12]; uint8 qh[32]; uint8 qs[128]}, as Q4_K with a fifth bit per
// value in qh.
func decodeQ5K(b []byte, y []float32) {
	d, dmin := f16At(b), f16At(b[2:])
	scales, qh, qs := b[4:16], b[16:48], b[48:176]
	k := 0
	u1, u2 := byte(1), byte(2)
	for j := 0; j < 8; j += 2 {
		sc1, m1 := scaleMinK4(j, scales)
		sc2, m2 := scaleMinK4(j+1, scales)
		d1, min1 := d*float32(sc1), dmin*float32(m1)
		d2, min2 := d*float32(sc2), dmin*float32(m2)
		ql := qs[16*j : 16*j+32]
		for l, v := range ql {
			q := v & 0xF
			if qh[l]&u1 != 0 {
				q += 16
			}
			y[k] = float32(d1*float32(q)) - min1
			k++
		}
		for l, v := range ql {
			q := v >> 4
			if qh[l]&u2 != 0 {
				q += 16
			}
			y[k] = float32(d2*float32(q)) - min2
			k++
		}
		u1, u2 = u1<<2, u2<<2
	}
}
