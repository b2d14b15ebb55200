package quant

import (
	"math"

	"github.com/ckptcheck/ckptcheck/tensorfile"
)

var _ = registerGGML(tensorfile.MXFP4, decodeGGMLMXFP4)

// kvaluesMXFP4 is ggml's kvalues_mxfp4: the E2M1 values doubled, which
// the halved scale undoes.
var kvaluesMXFP4 = [16]int8{0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12}

// kvaluesMXFP4Float is kvaluesMXFP4 as float32, mxfp4Steps16 the step of
// each code (mxfp4Steps of its magnitude).
var (
	kvaluesMXFP4Float = [16]float32{0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12}
	mxfp4Steps16      = [16]float32{1, 1, 1, 1, 2, 2, 4, 8, 1, 1, 1, 1, 2, 2, 4, 8}
)

// decodeGGMLMXFP4 is dequantize_row_mxfp4: block_mxfp4 {uint8 e; uint8
// qs[16]}, low nibbles the first 16 values, kvalue·d with d =
// GGML_E8M0_TO_FP32_HALF(e).
func decodeGGMLMXFP4(b []byte, y []float32) { fusedMXFP4(b[:17], y, nil) }

// fusedMXFP4 is decodeGGMLMXFP4 and stepsMXFP4.
func fusedMXFP4(src []byte, ys, sts []float32) {
	for i := range len(src) / 17 {
		b, y, st := blockAt(src, ys, sts, i, 17, 32)
		blk := (*[17]byte)(b)
		d := e8m0Half(blk[0])
		qs := (*[16]byte)(blk[1:])
		nibbleMul(qs, y, &kvaluesMXFP4Float, d)
		if st != nil {
			nibbleMul(qs, st, &mxfp4Steps16, d)
		}
	}
}

// e8m0Half is GGML_E8M0_TO_FP32_HALF: 2^(e-128), subnormal for e < 2.
func e8m0Half(e uint8) float32 {
	if e < 2 {
		return math.Float32frombits(0x00200000 << e)
	}
	return math.Float32frombits(uint32(e-1) << 23)
}
