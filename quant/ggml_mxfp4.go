package quant

import (
	"math"

	"github.com/ckptcheck/ckptcheck/tensorfile"
)

var _ = registerGGML(tensorfile.MXFP4, decodeGGMLMXFP4)

// kvaluesMXFP4 is ggml's kvalues_mxfp4: the E2M1 values doubled, which
// the halved scale undoes.
var kvaluesMXFP4 = [16]int8{0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12}

// decodeGGMLMXFP4 is dequantize_row_mxfp4: block_mxfp4 {uint8 e; uint8
// qs[16]}, low nibbles the first 16 values, kvalue·d with d =
// GGML_E8M0_TO_FP32_HALF(e).
func decodeGGMLMXFP4(b []byte, y []float32) {
	d := e8m0Half(b[0])
	for j, q := range b[1:17] {
		y[j] = float32(kvaluesMXFP4[q&0xF]) * d
		y[j+16] = float32(kvaluesMXFP4[q>>4]) * d
	}
}

// e8m0Half is GGML_E8M0_TO_FP32_HALF: 2^(e-128), subnormal for e < 2.
func e8m0Half(e uint8) float32 {
	if e < 2 {
		return math.Float32frombits(0x00200000 << e)
	}
	return math.Float32frombits(uint32(e-1) << 23)
}
