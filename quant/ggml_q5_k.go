package quant

import (
	"encoding/binary"

	"github.com/ckptcheck/ckptcheck/tensorfile"
)

var _ = registerGGML(tensorfile.Q5_K, decodeQ5K)

// decodeQ5K is dequantize_row_q5_K: block_q5_K {half d, dmin; uint8
// scales[12]; uint8 qh[32]; uint8 qs[128]}, as Q4_K with a fifth bit per
// value in qh.
func decodeQ5K(b []byte, y []float32) { fusedQ5K(b[:176], y, nil) }

// fusedQ5K is decodeQ5K and stepsQ5K: the fifth bit taken by a shift, not
// a branch.
func fusedQ5K(src []byte, ys, sts []float32) {
	f16 := f16Table()
	for i := range len(src) / 176 {
		b, y, st := blockAt(src, ys, sts, i, 176, 256)
		blk := (*[176]byte)(b)
		d, dmin := f16[binary.LittleEndian.Uint16(blk[:])], f16[binary.LittleEndian.Uint16(blk[2:])]
		scales, qh := blk[4:16], (*[32]byte)(blk[16:48])
		for j := 0; j < 8; j += 2 {
			sc1, m1 := scaleMinK4(j, scales)
			sc2, m2 := scaleMinK4(j+1, scales)
			d1, min1 := d*float32(sc1), dmin*float32(m1)
			d2, min2 := d*float32(sc2), dmin*float32(m2)
			ql := (*[32]byte)(blk[48+16*j:])
			lo, hi := (*[32]float32)(y[32*j:]), (*[32]float32)(y[32*j+32:])
			for l, v := range ql {
				h := qh[l] >> j
				lo[l] = float32(d1*float32(v&0xF|h&1<<4)) - min1
				hi[l] = float32(d2*float32(v>>4|h&2<<3)) - min2
			}
			if st != nil {
				fill32((*[32]float32)(st[32*j:]), step(d1, 31))
				fill32((*[32]float32)(st[32*j+32:]), step(d2, 31))
			}
		}
	}
}
