package quant

import (
	"encoding/binary"

	"github.com/ckptcheck/ckptcheck/tensorfile"
)

var _ = registerGGML(tensorfile.Q3_K, decodeQ3K)

// decodeQ3K is dequantize_row_q3_K: block_q3_K {uint8 hmask[32]; uint8
// qs[64]; uint8 scales[12]; half d}, 16 sub-blocks with 6-bit signed
// scales (12 bytes unpacked as ggml's kmask shuffle does), the third bit of
// each value in hmask, clear meaning −4.
func decodeQ3K(b []byte, y []float32) {
	hm, qs := b[:32], b[32:96]
	d := f16At(b[108:])
	scales := q3KScales(b)
	is, k := 0, 0
	m := byte(1)
	for n := 0; n < 256; n += 128 {
		q := qs[n/4 : n/4+32]
		for shift := uint(0); shift < 8; shift += 2 {
			for half := 0; half < 2; half++ {
				dl := d * float32(int(scales[is])-32)
				is++
				for l := 16 * half; l < 16*half+16; l++ {
					v := int((q[l] >> shift) & 3)
					if hm[l]&m == 0 {
						v -= 4
					}
					y[k] = dl * float32(v)
					k++
				}
			}
			m <<= 1
		}
	}
}

// q3KScales unpacks the 16 6-bit scales of a Q3_K block (biased by 32) as
// ggml's kmask shuffle does.
func q3KScales(b []byte) (scales [16]int8) {
	var aux [4]uint32
	for i := range 3 {
		aux[i] = binary.LittleEndian.Uint32(b[96+4*i:])
	}
	const kmask1, kmask2 = 0x03030303, 0x0f0f0f0f
	tmp := aux[2]
	aux[2] = ((aux[0] >> 4) & kmask2) | (((tmp >> 4) & kmask1) << 4)
	aux[3] = ((aux[1] >> 4) & kmask2) | (((tmp >> 6) & kmask1) << 4)
	aux[0] = (aux[0] & kmask2) | (((tmp >> 0) & kmask1) << 4)
	aux[1] = (aux[1] & kmask2) | (((tmp >> 2) & kmask1) << 4)
	for i := range scales {
		scales[i] = int8(aux[i/4] >> (8 * uint(i%4)))
	}
	return scales
}
