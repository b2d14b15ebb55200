package quant

import (
	"encoding/binary"

	"github.com/ckptcheck/ckptcheck/tensorfile"
)

var _ = registerGGML(tensorfile.Q4_1, decodeQ4_1)

// decodeQ4_1 is dequantize_row_q4_1: block_q4_1 {half d, m; uint8
// qs[16]}, q·d + m, the product rounded before the add.
func decodeQ4_1(b []byte, y []float32) { fusedQ4_1(b[:20], y, nil) }

// fusedQ4_1 is decodeQ4_1 and stepsQ4_1.
func fusedQ4_1(src []byte, ys, sts []float32) {
	f16 := f16Table()
	for i := range len(src) / 20 {
		b, y, st := blockAt(src, ys, sts, i, 20, 32)
		blk := (*[20]byte)(b)
		d, m := f16[binary.LittleEndian.Uint16(blk[:])], f16[binary.LittleEndian.Uint16(blk[2:])]
		var lv, ls [16]float32
		for n, q := range &nibbleFloat {
			lv[n] = float32(q*d) + m
		}
		if st != nil {
			ad, adh := halfSteps(d)
			mu := 2 * abs32(m) * halfULP
			for n, q := range &nibbleFloat {
				ls[n] = float32(ad+2*q*adh) + mu
			}
		}
		nibbleLookup((*[16]byte)(blk[4:]), y, &lv)
		if st != nil {
			nibbleLookup((*[16]byte)(blk[4:]), st, &ls)
		}
	}
}
