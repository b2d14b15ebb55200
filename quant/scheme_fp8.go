package quant

import (
	"github.com/ckptcheck/ckptcheck/internal/strictjson"
	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// fp8Scheme is quant_method "fp8", block-scaled FP8 as DeepSeek-V3 ships it
// (deepseek-ai/DeepSeek-V3 inference/fp8_cast_bf16.py; transformers
// integrations/finegrained_fp8.py, read 2026-12-01): X.weight F8_E4M3
// [out, in] beside X.weight_scale_inv F32 [ceil(out/128), ceil(in/128)].
// The block is the config's weight_block_size (transformers' default
// [128, 128] when the config has none); a config with "weight_block_size":
// null is one scale a tensor. Both decode (BlockFP8, ChannelFP8);
// X.input_scale is carried.
type fp8Scheme struct{}

var fp8Layouts = []layout{{
	encoding: "block", data: ".weight", weight: ".weight", shared: true, shape: dataShape,
	parts: []companion{{Scale, []string{".weight_scale_inv"}}, {InputScale, []string{".input_scale"}}},
}}

func init() { RegisterScheme(fp8Scheme{}) }

func (fp8Scheme) Name() string { return "fp8" }

func (fp8Scheme) Bind(config []byte, tensors []tensorfile.TensorInfo) (Bound, error) {
	block, perTensor := []uint64{128, 128}, false
	err := configMembers(config, func(key string, d *strictjson.Decoder) error {
		if key != "weight_block_size" {
			return d.Skip()
		}
		if d.Peek() == 'n' {
			perTensor = true
			return d.Literal("null")
		}
		var err error
		block, err = jsonUints(d, 2)
		if err == nil && len(block) != 2 {
			return d.Fail("weight_block_size of %d numbers", len(block))
		}
		return err
	})
	if err != nil {
		return Bound{}, err
	}
	codec, err := intern(blockKey{block[0], block[1]}, func() (Codec, error) { return NewBlockFP8(block[0], block[1]) })
	if perTensor {
		codec, err = intern(channelKey{tensorfile.F32, true}, func() (Codec, error) { return NewChannelFP8(tensorfile.F32, true) })
	}
	if err != nil {
		return Bound{}, err
	}
	return bindLayouts("fp8", fp8Layouts, tensors, func(_ *layout, infos []*tensorfile.TensorInfo, b *Binding) {
		if len(infos[0].Shape) < 2 && !perTensor {
			return // block scales need a matrix
		}
		realize(b, infos, codec, []int{0, 1}, []int{2}, -1, nil)
	}), nil
}

// Interning keys of the codecs the schemes make.
type (
	blockKey   struct{ rows, cols uint64 }
	channelKey struct {
		scale     tensorfile.DType
		perTensor bool
	}
)
