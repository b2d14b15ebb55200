package quant

import (
	"encoding/binary"

	"github.com/ckptcheck/ckptcheck/tensorfile"
)

var _ = registerGGML(tensorfile.Q6_K, decodeQ6K)

// decodeQ6K is dequantize_row_q6_K: block_q6_K {uint8 ql[128]; uint8
// qh[64]; int8 scales[16]; half d}, 6-bit values (low 4 bits in ql, high 2
// in qh) minus 32, times d·scale rounded before the multiply by q.
func decodeQ6K(b []byte, y []float32) { fusedQ6K(b[:210], y, nil) }

// fusedQ6K is decodeQ6K and stepsQ6K, each sub-block's d·scale taken once.
func fusedQ6K(src []byte, ys, sts []float32) {
	f16 := f16Table()
	for i := range len(src) / 210 {
		b, y, st := blockAt(src, ys, sts, i, 210, 256)
		blk := (*[210]byte)(b)
		d := f16[binary.LittleEndian.Uint16(blk[208:])]
		var ds [16]float32
		for i, s := range blk[192:208] {
			ds[i] = d * float32(int8(s))
		}
		for n := range 2 {
			ql, qh := (*[64]byte)(blk[64*n:]), (*[32]byte)(blk[128+32*n:])
			out := (*[128]float32)(y[128*n:])
			sc := (*[8]float32)(ds[8*n:])
			for l := range 32 {
				is := l / 16
				q1 := int(ql[l]&0xF|(qh[l]&3)<<4) - 32
				q2 := int(ql[l+32]&0xF|((qh[l]>>2)&3)<<4) - 32
				q3 := int(ql[l]>>4|((qh[l]>>4)&3)<<4) - 32
				q4 := int(ql[l+32]>>4|((qh[l]>>6)&3)<<4) - 32
				out[l] = sc[is] * float32(q1)
				out[l+32] = sc[is+2] * float32(q2)
				out[l+64] = sc[is+4] * float32(q3)
				out[l+96] = sc[is+6] * float32(q4)
			}
		}
		if st != nil {
			for i, s := range ds {
				fill16((*[16]float32)(st[16*i:]), step(s, 32))
			}
		}
	}
}
