package quant

import "github.com/ckptcheck/ckptcheck/tensorfile"

// fp8Scheme is quant_method "fp8", block-scaled FP8 as DeepSeek-V3 ships it
// (deepseek-ai/DeepSeek-V3 inference/fp8_cast_bf16.py; transformers
// integrations/finegrained_fp8.py, read 2026-12-01): X.weight F8_E4M3
// [out, in] beside X.weight_scale_inv F32 [ceil(out/128), ceil(in/128)].
// Block FP8 is not decoded yet (ScaledFP8 is the per-tensor layout).
type fp8Scheme struct{}

var fp8Layouts = []layout{{
	encoding: "block", data: ".weight", weight: ".weight", shared: true, shape: dataShape,
	parts: []companion{{Scale, []string{".weight_scale_inv"}}, {InputScale, []string{".input_scale"}}},
}}

func init() { RegisterScheme(fp8Scheme{}) }

func (fp8Scheme) Name() string { return "fp8" }

func (fp8Scheme) Bind(_ []byte, tensors []tensorfile.TensorInfo) (Bound, error) {
	return bindLayouts("fp8", fp8Layouts, tensors), nil
}
