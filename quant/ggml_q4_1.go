package quant

import "github.com/ckptcheck/ckptcheck/tensorfile"

var _ = registerGGML(tensorfile.Q4_1, decodeQ4_1)

// decodeQ4_1 is dequantize_row_q4_1: block_q4_1 {half d, m; uint8
// qs[16]}, q·d + m, the product rounded before the add.
func decodeQ4_1(b []byte, y []float32) {
	d, m := f16At(b), f16At(b[2:])
	for j, q := range b[4:20] {
		y[j] = float32(float32(q&0xF)*d) + m
		y[j+16] = float32(float32(q>>4)*d) + m
	}
}
