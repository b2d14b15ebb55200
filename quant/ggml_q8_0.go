package quant

import "github.com/ckptcheck/ckptcheck/tensorfile"

var _ = registerGGML(tensorfile.Q8_0, decodeQ8_0)

// decodeQ8_0 is dequantize_row_q8_0: block_q8_0 {half d; int8 qs[32]},
// y = qs·d.
func decodeQ8_0(b []byte, y []float32) {
	if q8Scaled(b[:34], y, nil) {
		return
	}
	d := f16At(b)
	y = y[:32]
	for j, q := range b[2:34] {
		y[j] = float32(int8(q)) * d
	}
}
