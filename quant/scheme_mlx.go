package quant

import (
	"strings"

	"github.com/ckptcheck/ckptcheck/internal/strictjson"
	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// mlxScheme is MLX's affine quantization, as mlx-lm saves it (config.json's
// "quantization": {"group_size", "bits"}, with no quant_method;
// ml-explore/mlx python/mlx/nn/layers/quantized.py QuantizedLinear and
// QuantizedEmbedding, ml-explore/mlx-lm mlx_lm/utils.py, read 2026-12-01):
// X.weight U32 [out, in·bits/32] beside X.scales and X.biases [out,
// in/group_size] (the mxfp4 mode has no biases). X.biases is the affine
// offset of each group, not the layer's X.bias. The config's group_size and
// bits (mlx's defaults 64 and 4 without one), overridden per module by
// mlx-lm's mixed-precision entries ("model.layers.0.mlp.down_proj":
// {"group_size", "bits"}), choose the MLXAffine codec for 2, 4 and 8 bits;
// another "mode" stays Unsupported. The logical shape is the data's with
// its last dimension unpacked.
type mlxScheme struct{}

var mlxLayouts = []layout{{encoding: "affine", data: ".weight", weight: ".weight", shared: true, parts: []companion{
	{Scale, []string{".scales"}}, {ZeroPoint, []string{".biases"}},
}}}

func init() { RegisterScheme(mlxScheme{}) }

func (mlxScheme) Name() string { return "mlx" }

type mlxParams struct{ group, bits uint64 }

type mlxKey struct {
	mlxParams
	t tensorfile.DType
}

func parseMLXParams(d *strictjson.Decoder, p *mlxParams, mode *string) error {
	return d.Members(func(key string) error {
		var err error
		switch key {
		case "group_size":
			p.group, err = d.Uint()
		case "bits":
			p.bits, err = d.Uint()
		case "mode":
			*mode, err = d.Str()
		default:
			err = d.Skip()
		}
		return err
	})
}

func (mlxScheme) Bind(config []byte, tensors []tensorfile.TensorInfo) (Bound, error) {
	top, mode := mlxParams{64, 4}, "affine"
	perModule := map[string]mlxParams{}
	err := configMembers(config, func(key string, d *strictjson.Decoder) error {
		var err error
		switch key {
		case "group_size":
			top.group, err = d.Uint()
		case "bits":
			top.bits, err = d.Uint()
		case "mode":
			mode, err = d.Str()
		default:
			if d.Peek() != '{' {
				return d.Skip() // false: a module left unquantized
			}
			p, m := mlxParams{}, "affine"
			if err = parseMLXParams(d, &p, &m); err == nil && m == "affine" {
				perModule[key] = p
			}
		}
		return err
	})
	if err != nil {
		return Bound{}, err
	}
	return bindLayouts("mlx", mlxLayouts, tensors, func(_ *layout, infos []*tensorfile.TensorInfo, b *Binding) {
		data, scales := infos[0], infos[1]
		if mode != "affine" || data.DType != tensorfile.U32 || scales == nil || len(data.Shape) < 1 {
			return
		}
		k := mlxKey{top, scales.DType}
		if p, ok := perModule[strings.TrimSuffix(b.Weight, ".weight")]; ok {
			if p.group != 0 {
				k.group = p.group
			}
			if p.bits != 0 {
				k.bits = p.bits
			}
		}
		pack, err := packBits("mlx affine", k.bits)
		if err != nil {
			return
		}
		codec, err := intern(k, func() (Codec, error) { return NewMLXAffine(k.bits, k.group, k.t) })
		if err != nil {
			return
		}
		shape := append([]uint64(nil), data.Shape...)
		in, ok := mul(shape[len(shape)-1], pack)
		if !ok {
			return
		}
		shape[len(shape)-1] = in
		if realize(b, infos, codec, []int{0, 1, 2}, nil, -1, nil) {
			b.Shape = shape
		}
	}), nil
}
