package quant

import "github.com/ckptcheck/ckptcheck/tensorfile"

var _ = registerGGML(tensorfile.Q2_K, decodeQ2K)

// decodeQ2K is dequantize_row_q2_K: block_q2_K {uint8 scales[16]; uint8
// qs[64]; half d, dmin}, 16 sub-blocks of 16 values with a 4-bit scale and
// a 4-bit min each: (d·sc)·q − dmin·m, each product rounded.
func decodeQ2K(b []byte, y []float32) {
	scales, qs := b[:16], b[16:80]
	d, dmin := f16At(b[80:]), f16At(b[82:])
	is, k := 0, 0
	for n := 0; n < 256; n += 128 {
		q := qs[n/4 : n/4+32]
		for shift := uint(0); shift < 8; shift += 2 {
			for half := 0; half < 2; half++ {
				sc := scales[is]
				is++
				dl, ml := d*float32(sc&0xF), dmin*float32(sc>>4)
				for l := range 16 {
					y[k] = float32(dl*float32((q[l+16*half]>>shift)&3)) - ml
					k++
				}
			}
		}
	}
}
