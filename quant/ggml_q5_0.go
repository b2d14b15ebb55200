package quant

import (
	"encoding/binary"

	"github.com/ckptcheck/ckptcheck/tensorfile"
)

var _ = registerGGML(tensorfile.Q5_0, decodeQ5_0)

// decodeQ5_0 is dequantize_row_q5_0: block_q5_0 {half d; uint8 qh[4];
// uint8 qs[16]}, the fifth bit of value j in bit j of qh, (q-16)·d.
func decodeQ5_0(b []byte, y []float32) {
	d := f16At(b)
	qh := binary.LittleEndian.Uint32(b[2:])
	for j, q := range b[6:22] {
		h0 := byte((qh>>uint(j))<<4) & 0x10
		h1 := byte(qh>>uint(j+12)) & 0x10
		y[j] = float32(int(q&0xF|h0)-16) * d
		y[j+16] = float32(int(q>>4|h1)-16) * d
	}
}
