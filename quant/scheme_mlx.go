package quant

import "github.com/ckptcheck/ckptcheck/tensorfile"

// mlxScheme is MLX's affine quantization, as mlx-lm saves it (config.json's
// "quantization": {"group_size", "bits"}, with no quant_method;
// ml-explore/mlx python/mlx/nn/layers/quantized.py QuantizedLinear and
// QuantizedEmbedding, ml-explore/mlx-lm mlx_lm/utils.py, read 2026-12-01):
// X.weight U32 [out, in·bits/32] beside X.scales and X.biases [out,
// in/group_size] (the mxfp4 mode has no biases). X.biases is the affine
// offset of each group, not the layer's X.bias.
type mlxScheme struct{}

var mlxLayouts = []layout{{encoding: "affine", data: ".weight", weight: ".weight", shared: true, parts: []companion{
	{Scale, []string{".scales"}}, {ZeroPoint, []string{".biases"}},
}}}

func init() { RegisterScheme(mlxScheme{}) }

func (mlxScheme) Name() string { return "mlx" }

func (mlxScheme) Bind(_ []byte, tensors []tensorfile.TensorInfo) (Bound, error) {
	return bindLayouts("mlx", mlxLayouts, tensors), nil
}
