package quant

import "github.com/ckptcheck/ckptcheck/tensorfile"

// gptqScheme is quant_method "gptq" (AutoGPTQ/GPTQModel's QuantLinear, as
// transformers and optimum load it; ModelCloud/GPTQModel
// gptqmodel/nn_modules/qlinear/__init__.py, read 2026-12-01): X.qweight
// I32 [in·bits/32, out] beside X.qzeros I32 [groups, out·bits/32],
// X.scales F16 [groups, out] and X.g_idx I32 [in], for the weight
// X.weight; X.bias stays a plain tensor.
type gptqScheme struct{}

var gptqLayouts = []layout{{encoding: "int", data: ".qweight", weight: ".weight", parts: []companion{
	{Scale, []string{".scales"}}, {ZeroPoint, []string{".qzeros"}}, {Index, []string{".g_idx"}},
}}}

func init() { RegisterScheme(gptqScheme{}) }

func (gptqScheme) Name() string { return "gptq" }

func (gptqScheme) Bind(_ []byte, tensors []tensorfile.TensorInfo) (Bound, error) {
	return bindLayouts("gptq", gptqLayouts, tensors), nil
}
