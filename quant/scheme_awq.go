package quant

import "github.com/ckptcheck/ckptcheck/tensorfile"

// awqScheme is quant_method "awq" (casper-hansen/AutoAWQ
// awq/modules/linear/gemm.py WQLinear_GEMM, read 2026-12-01): X.qweight
// I32 [in, out·bits/32] beside X.qzeros I32 [groups, out·bits/32] and
// X.scales F16 [groups, out], for the weight X.weight.
type awqScheme struct{}

var awqLayouts = []layout{{encoding: "int", data: ".qweight", weight: ".weight", parts: []companion{
	{Scale, []string{".scales"}}, {ZeroPoint, []string{".qzeros"}},
}}}

func init() { RegisterScheme(awqScheme{}) }

func (awqScheme) Name() string { return "awq" }

func (awqScheme) Bind(_ []byte, tensors []tensorfile.TensorInfo) (Bound, error) {
	return bindLayouts("awq", awqLayouts, tensors), nil
}
