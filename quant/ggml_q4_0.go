package quant

import "github.com/ckptcheck/ckptcheck/tensorfile"

var _ = registerGGML(tensorfile.Q4_0, decodeQ4_0)

// decodeQ4_0 is dequantize_row_q4_0: block_q4_0 {half d; uint8 qs[16]},
// the low nibbles the first 16 values, the high ones the next, (q-8)·d.
func decodeQ4_0(b []byte, y []float32) {
	d := f16At(b)
	for j, q := range b[2:18] {
		y[j] = float32(int(q&0xF)-8) * d
		y[j+16] = float32(int(q>>4)-8) * d
	}
}
