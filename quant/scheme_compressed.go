package quant

import "github.com/ckptcheck/ckptcheck/tensorfile"

// compressedScheme is quant_method "compressed-tensors" (llm-compressor's
// output; vllm-project/compressed-tensors
// src/compressed_tensors/compressors/quantized_compressors/pack_quantized.py,
// naive_quantized.py and nvfp4_quantized.py, read 2026-12-01):
//   - packed integers (pack-quantized, NVFP4): X.weight_packed beside
//     X.weight_scale, X.weight_zero_point, X.weight_g_idx, X.weight_shape
//     (the unpacked shape, as an I64 tensor: in the data, not the header),
//     X.weight_global_scale;
//   - int8 and FP8 (naive-quantized, float-quantized): X.weight beside
//     X.weight_scale, X.weight_zero_point, X.input_scale.
type compressedScheme struct{}

var compressedLayouts = []layout{
	{encoding: "packed", data: ".weight_packed", weight: ".weight", parts: []companion{
		{Scale, []string{".weight_scale"}}, {ZeroPoint, []string{".weight_zero_point"}},
		{GlobalScale, []string{".weight_global_scale"}}, {Index, []string{".weight_g_idx"}},
		{Meta, []string{".weight_shape"}}, {InputScale, []string{".input_scale", ".input_global_scale"}},
	}},
	{encoding: "scaled", data: ".weight", weight: ".weight", shared: true, shape: dataShape, parts: []companion{
		{Scale, []string{".weight_scale"}}, {ZeroPoint, []string{".weight_zero_point"}},
		{Index, []string{".weight_g_idx"}}, {InputScale, []string{".input_scale"}},
	}},
}

func init() { RegisterScheme(compressedScheme{}) }

func (compressedScheme) Name() string { return "compressed-tensors" }

func (compressedScheme) Bind(_ []byte, tensors []tensorfile.TensorInfo) (Bound, error) {
	return bindLayouts("compressed-tensors", compressedLayouts, tensors), nil
}
