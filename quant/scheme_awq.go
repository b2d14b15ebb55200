package quant

import (
	"strings"

	"github.com/ckptcheck/ckptcheck/internal/strictjson"
	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// awqScheme is quant_method "awq" (casper-hansen/AutoAWQ
// awq/modules/linear/gemm.py WQLinear_GEMM, read 2026-12-01): X.qweight
// I32 [in, out·bits/32] beside X.qzeros I32 [groups, out·bits/32] and
// X.scales F16 [groups, out], for the weight X.weight. The GEMM version
// (the default) with 4 bits and zero points decodes (AWQ, its group the
// config's group_size, else in/groups from the scales); GEMV and the other
// kernels' layouts stay Unsupported. The logical shape is [out, in].
type awqScheme struct{}

var awqLayouts = []layout{{encoding: "int", data: ".qweight", weight: ".weight", parts: []companion{
	{Scale, []string{".scales"}}, {ZeroPoint, []string{".qzeros"}},
}}}

func init() { RegisterScheme(awqScheme{}) }

func (awqScheme) Name() string { return "awq" }

type awqKey struct {
	group uint64
	scale tensorfile.DType
}

func (awqScheme) Bind(config []byte, tensors []tensorfile.TensorInfo) (Bound, error) {
	bits, group, version, zeroPoint := uint64(4), uint64(0), "gemm", true
	err := configMembers(config, func(key string, d *strictjson.Decoder) error {
		var err error
		switch key {
		case "bits", "w_bit":
			bits, err = d.Uint()
		case "group_size", "q_group_size":
			group, err = jsonGroupSize(d)
		case "version":
			version, err = d.Str()
			version = strings.ToLower(version)
		case "zero_point":
			zeroPoint, err = jsonBool(d)
		default:
			err = d.Skip()
		}
		return err
	})
	if err != nil {
		return Bound{}, err
	}
	return bindLayouts("awq", awqLayouts, tensors, func(_ *layout, infos []*tensorfile.TensorInfo, b *Binding) {
		qw, scales := infos[0], infos[1]
		if bits != 4 || version != "gemm" || !zeroPoint || len(qw.Shape) != 2 {
			return
		}
		out, ok := mul(qw.Shape[1], 8)
		if !ok {
			return
		}
		k := awqKey{group, tensorfile.F16}
		if scales != nil {
			k.scale = scales.DType
			if k.group == 0 && len(scales.Shape) == 2 && scales.Shape[0] > 0 && qw.Shape[0]%scales.Shape[0] == 0 {
				k.group = qw.Shape[0] / scales.Shape[0]
			}
		}
		if k.group == 0 {
			k.group = qw.Shape[0]
		}
		codec, err := intern(k, func() (Codec, error) { return NewAWQ(k.group, k.scale) })
		if err == nil && realize(b, infos, codec, []int{0, 1, 2}, nil, -1, nil) {
			b.Shape = []uint64{out, qw.Shape[0]}
		}
	}), nil
}
