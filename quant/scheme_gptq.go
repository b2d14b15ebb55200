package quant

import (
	"github.com/ckptcheck/ckptcheck/internal/strictjson"
	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// gptqScheme is quant_method "gptq" (AutoGPTQ/GPTQModel's QuantLinear, as
// transformers and optimum load it; ModelCloud/GPTQModel
// gptqmodel/nn_modules/qlinear/__init__.py, read 2026-12-01): X.qweight
// I32 [in·bits/32, out] beside X.qzeros I32 [groups, out·bits/32],
// X.scales F16 [groups, out] and X.g_idx I32 [in], for the weight
// X.weight; X.bias stays a plain tensor. The config's bits (2, 4, 8 decode;
// without a config, inferred from g_idx, else 4), group_size and
// checkpoint_format ("gptq_v2" stores zeros without v1's −1) choose the GPTQ
// codec; the logical shape is [out, in] from qweight's header.
type gptqScheme struct{}

var gptqLayouts = []layout{{encoding: "int", data: ".qweight", weight: ".weight", parts: []companion{
	{Scale, []string{".scales"}}, {ZeroPoint, []string{".qzeros"}}, {Index, []string{".g_idx"}},
}}}

func init() { RegisterScheme(gptqScheme{}) }

func (gptqScheme) Name() string { return "gptq" }

type gptqKey GPTQConfig

func (gptqScheme) Bind(config []byte, tensors []tensorfile.TensorInfo) (Bound, error) {
	var bits, group uint64
	haveGroup, v2 := false, false
	err := configMembers(config, func(key string, d *strictjson.Decoder) error {
		var err error
		switch key {
		case "bits":
			bits, err = d.Uint()
		case "group_size":
			group, err = jsonGroupSize(d)
			haveGroup = true
		case "checkpoint_format":
			var f string
			f, err = d.Str()
			v2 = f == "gptq_v2"
		default:
			err = d.Skip()
		}
		return err
	})
	if err != nil {
		return Bound{}, err
	}
	return bindLayouts("gptq", gptqLayouts, tensors, func(_ *layout, infos []*tensorfile.TensorInfo, b *Binding) {
		qw, scales, gidx := infos[0], infos[1], infos[3]
		if len(qw.Shape) != 2 || qw.Shape[0] == 0 {
			return
		}
		q := GPTQConfig{Bits: bits, GroupSize: group, Scale: tensorfile.F16, ZeroOffset: 1, GIdx: gidx != nil}
		if v2 {
			q.ZeroOffset = 0
		}
		if scales != nil {
			q.Scale = scales.DType
		}
		if q.Bits == 0 { // no config: the packing ratio of qweight to g_idx
			q.Bits = 4
			if gidx != nil && len(gidx.Shape) == 1 && gidx.Shape[0]%qw.Shape[0] == 0 && gidx.Shape[0] > 0 {
				q.Bits = 32 / (gidx.Shape[0] / qw.Shape[0])
			}
		}
		pack, err := packBits("gptq", q.Bits)
		if err != nil {
			return
		}
		in, ok := mul(qw.Shape[0], pack)
		if !ok {
			return
		}
		if !haveGroup && scales != nil && len(scales.Shape) == 2 && scales.Shape[0] > 0 && in%scales.Shape[0] == 0 {
			q.GroupSize = in / scales.Shape[0]
		}
		codec, err := intern(gptqKey(q), func() (Codec, error) { return NewGPTQ(q) })
		if err != nil {
			return
		}
		decoded := []int{0, 1, 2}
		if q.GIdx {
			decoded = append(decoded, 3)
		}
		if realize(b, infos, codec, decoded, nil, -1, nil) {
			b.Shape = []uint64{qw.Shape[1], in}
		}
	}), nil
}
