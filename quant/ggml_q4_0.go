package quant

import (
	"encoding/binary"

	"github.com/ckptcheck/ckptcheck/tensorfile"
)

var _ = registerGGML(tensorfile.Q4_0, decodeQ4_0)

// decodeQ4_0 is dequantize_row_q4_0: block_q4_0 {half d; uint8 qs[16]},
// the low nibbles the first 16 values, the high ones the next, (q-8)·d.
func decodeQ4_0(b []byte, y []float32) { fusedQ4_0(b[:18], y, nil) }

// fusedQ4_0 is decodeQ4_0 and stepsQ4_0.
func fusedQ4_0(src []byte, ys, sts []float32) {
	f16 := f16Table()
	for i := range len(src) / 18 {
		b, y, st := blockAt(src, ys, sts, i, 18, 32)
		blk := (*[18]byte)(b)
		d := f16[binary.LittleEndian.Uint16(blk[:])]
		qs := (*[16]byte)(blk[2:])
		nibbleMul(qs, y, &q4_0Codes, d)
		if st != nil {
			var ls [16]float32
			ad, adh := halfSteps(d)
			for n, t := range &q4_0Twice {
				ls[n] = ad + t*adh
			}
			ls[15] *= 2 // the clamped top code
			nibbleLookup(qs, st, &ls)
		}
	}
}

// q4_0Codes are the codes' q − 8, q4_0Twice their 2|q − 8|.
var (
	q4_0Codes = [16]float32{-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7}
	q4_0Twice = [16]float32{16, 14, 12, 10, 8, 6, 4, 2, 0, 2, 4, 6, 8, 10, 12, 14}
)
