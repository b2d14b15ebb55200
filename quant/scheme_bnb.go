package quant

import "github.com/ckptcheck/ckptcheck/tensorfile"

// bnbScheme is quant_method "bitsandbytes" (bitsandbytes-foundation/
// bitsandbytes bitsandbytes/functional.py QuantState.as_dict(packed=True)
// and nn/modules.py Linear8bitLt._save_to_state_dict; transformers
// integrations/bitsandbytes.py, read 2026-12-01):
//   - 4-bit (NF4, FP4): X.weight U8 (two values a byte, flattened to [n/2,
//     1]: the shape is in quant_state's data) beside X.weight.absmax,
//     X.weight.quant_map, X.weight.nested_absmax, X.weight.nested_quant_map
//     and X.weight.quant_state.bitsandbytes__nf4 (or __fp4);
//   - 8-bit (LLM.int8()): X.weight I8 [out, in] beside X.SCB and
//     X.weight_format.
type bnbScheme struct{}

var bnbLayouts = []layout{
	{encoding: "4-bit", data: ".weight", weight: ".weight", shared: true, parts: []companion{
		{Scale, []string{".weight.absmax"}}, {Table, []string{".weight.quant_map"}},
		{Scale, []string{".weight.nested_absmax"}}, {Table, []string{".weight.nested_quant_map"}},
		{Meta, []string{".weight.quant_state.bitsandbytes__nf4", ".weight.quant_state.bitsandbytes__fp4"}},
	}},
	{encoding: "int8", data: ".weight", weight: ".weight", shared: true, shape: dataShape, parts: []companion{
		{Scale, []string{".SCB"}}, {Meta, []string{".weight_format"}},
	}},
}

func init() { RegisterScheme(bnbScheme{}) }

func (bnbScheme) Name() string { return "bitsandbytes" }

func (bnbScheme) Bind(_ []byte, tensors []tensorfile.TensorInfo) (Bound, error) {
	return bindLayouts("bitsandbytes", bnbLayouts, tensors), nil
}
