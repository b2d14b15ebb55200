package quant

import (
	"math/bits"

	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// mxfp4Scheme is quant_method "mxfp4" as gpt-oss ships it (transformers
// src/transformers/integrations/mxfp4.py convert_moe_packed_tensors, read
// 2026-12-01): the weight X is stored as X_blocks U8 [..., rows, G, 16]
// (two FP4 values a byte, 32 a block) beside X_scales U8 [..., rows, G]
// (E8M0 exponents). transformers dequantizes it to [..., G·32, rows] for a
// stack of experts (it transposes dimensions 1 and 2), [rows, G·32] else:
// that is the Binding's Shape. The MXFP4 codec decodes the stored order,
// each matrix as Dims{rows, G·32}: for a stack, the logical [E, G·32, rows]
// is the transpose of what it decodes, a transpose the adapter's segment
// makes.
type mxfp4Scheme struct{}

var mxfp4Layouts = []layout{{encoding: "", data: "_blocks", weight: "", shape: mxfp4Shape,
	parts: []companion{{Scale, []string{"_scales"}}}}}

func init() { RegisterScheme(mxfp4Scheme{}) }

func (mxfp4Scheme) Name() string { return "mxfp4" }

func (mxfp4Scheme) Bind(_ []byte, tensors []tensorfile.TensorInfo) (Bound, error) {
	return bindLayouts("mxfp4", mxfp4Layouts, tensors, func(_ *layout, infos []*tensorfile.TensorInfo, b *Binding) {
		if b.Shape != nil {
			realize(b, infos, MXFP4{}, []int{0, 1}, nil, -1, nil)
		}
	}), nil
}

// mxfp4Shape is the dequantized shape of X_blocks [..., rows, G, 16], or nil
// when the blocks are not of that shape.
func mxfp4Shape(ts []*tensorfile.TensorInfo) []uint64 {
	s := ts[0].Shape
	n := len(s)
	if n < 3 || s[n-1] != 16 {
		return nil
	}
	hi, cols := bits.Mul64(s[n-2], 32)
	if hi != 0 {
		return nil
	}
	out := append(append(make([]uint64, 0, n-1), s[:n-2]...), cols)
	if len(out) >= 3 {
		out[1], out[2] = out[2], out[1]
	}
	return out
}
