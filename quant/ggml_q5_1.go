package quant

import (
	"encoding/binary"

	"github.com/ckptcheck/ckptcheck/tensorfile"
)

var _ = registerGGML(tensorfile.Q5_1, decodeQ5_1)

// decodeQ5_1 is dequantize_row_q5_1: block_q5_1 {half d, m; uint8 qh[4];
// uint8 qs[16]}, q·d + m, the product rounded before the add.
func decodeQ5_1(b []byte, y []float32) {
	d, m := f16At(b), f16At(b[2:])
	qh := binary.LittleEndian.Uint32(b[4:])
	for j, q := range b[8:24] {
		h0 := byte((qh>>uint(j))<<4) & 0x10
		h1 := byte(qh>>uint(j+12)) & 0x10
		y[j] = float32(float32(q&0xF|h0)*d) + m
		y[j+16] = float32(float32(q>>4|h1)*d) + m
	}
}
