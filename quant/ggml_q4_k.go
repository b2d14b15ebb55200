package quant

import "github.com/ckptcheck/ckptcheck/tensorfile"

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
	d, dmin := f16At(b), f16At(b[2:])
	scales, qs := b[4:16], b[16:144]
	var dm [16]float32 // each sub-block's d·sc and dmin·m
	for j := range 8 {
		sc, m := scaleMinK4(j, scales)
		dm[2*j], dm[2*j+1] = d*float32(sc), dmin*float32(m)
	}
	for j := 0; j < 8; j += 2 {
		d1, min1, d2, min2 := dm[2*j], dm[2*j+1], dm[2*j+2], dm[2*j+3]
		q := qs[16*j : 16*j+32]
		lo, hi := y[32*j:32*j+32], y[32*j+32:32*j+64]
		for i, v := range q {
			lo[i] = float32(d1*float32(v&0xF)) - min1
			hi[i] = float32(d2*float32(v>>4)) - min2
		}
	}
	if steps != nil {
		stepsQ4K(b, steps)
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
