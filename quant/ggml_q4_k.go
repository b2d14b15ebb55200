package quant

import (
	"encoding/binary"

	"github.com/ckptcheck/ckptcheck/tensorfile"
)

var _ = registerGGML(tensorfile.Q4_K, decodeQ4K)

// decodeQ4K is dequantize_row_q4_K: block_q4_K {half d, dmin; uint8
// scales[12]; uint8 qs[128]}, 8 sub-blocks of 32 values with 6-bit scales
// and mins (get_scale_min_k4): (d·sc)·q − dmin·m, each product rounded.
func decodeQ4K(b []byte, y []float32) { decodeStepsQ4K(b, y, nil) }

// decodeStepsQ4K is decodeQ4K that also writes the values' steps (see
// stepsQ4K) unless steps is nil.
func decodeStepsQ4K(b []byte, y, steps []float32) {
	if q4kBlocks(b[:144], y, steps) {
		return
	}
	q4kGo(b[:144], y, steps)
}

// q4kGo is the Go loop of q4kBlocks: the blocks of src into y and, unless
// steps is nil, their steps, a pair of sub-blocks (one byte of codes each
// value pair) at a time, four bytes an iteration, the steps' fill in the
// same pass.
func q4kGo(src []byte, y, steps []float32) {
	f16 := f16Table()
	for n := range len(src) / 144 {
		b := (*[144]byte)(src[144*n:])
		d, dmin := f16[binary.LittleEndian.Uint16(b[0:])], f16[binary.LittleEndian.Uint16(b[2:])]
		scales := b[4:16]
		for j := 0; j < 8; j += 2 {
			sc1, m1 := scaleMinK4(j, scales)
			sc2, m2 := scaleMinK4(j+1, scales)
			d1, min1, d2, min2 := d*float32(sc1), dmin*float32(m1), d*float32(sc2), dmin*float32(m2)
			q := (*[32]byte)(b[16+16*j:])
			lo, hi := (*[32]float32)(y[256*n+32*j:]), (*[32]float32)(y[256*n+32*j+32:])
			for i := 0; i < 32; i += 4 {
				v0, v1, v2, v3 := q[i], q[i+1], q[i+2], q[i+3]
				lo[i], lo[i+1] = float32(d1*float32(v0&0xF))-min1, float32(d1*float32(v1&0xF))-min1
				lo[i+2], lo[i+3] = float32(d1*float32(v2&0xF))-min1, float32(d1*float32(v3&0xF))-min1
				hi[i], hi[i+1] = float32(d2*float32(v0>>4))-min2, float32(d2*float32(v1>>4))-min2
				hi[i+2], hi[i+3] = float32(d2*float32(v2>>4))-min2, float32(d2*float32(v3>>4))-min2
			}
			if steps != nil {
				s1, s2 := step(d1, 15), step(d2, 15)
				sl, sh := (*[32]float32)(steps[256*n+32*j:]), (*[32]float32)(steps[256*n+32*j+32:])
				for i := 0; i < 32; i += 4 {
					sl[i], sl[i+1], sl[i+2], sl[i+3] = s1, s1, s1, s1
					sh[i], sh[i+1], sh[i+2], sh[i+3] = s2, s2, s2, s2
				}
			}
		}
	}
}

// scaleMinK4 is get_scale_min_k4: sub-block j's 6-bit scale and min out of
// the 12 packed bytes of a Q4_K or Q5_K block.
func scaleMinK4(j int, q []byte) (sc, m uint8) {
	if j < 4 {
		return q[j] & 63, q[j+4] & 63
	}
	return (q[j+4] & 0xF) | ((q[j-4] >> 6) << 4), (q[j+4] >> 4) | ((q[j] >> 6) << 4)
}
