package quant

import (
	"strings"

	"github.com/ckptcheck/ckptcheck/internal/strictjson"
	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// modeloptScheme is quant_method "modelopt", NVIDIA ModelOpt's Hugging
// Face export (NVIDIA/Model-Optimizer modelopt/torch/export/
// unified_export_hf.py and quant_utils.py, read 2026-12-01; vLLM's
// ModelOptNvFp4Config reads the same names): for quant_algo "NVFP4",
// X.weight U8 [out, in/2] beside X.weight_scale F8_E4M3 [out, in/16],
// X.weight_scale_2 F32 (which multiplies) and X.input_scale (carried),
// decoded by NVFP4ModelOpt; for "FP8", X.weight F8_E4M3 beside one F32
// X.weight_scale, decoded by ChannelFP8 per tensor. Other algorithms stay
// Unsupported. The config's quant_algo may sit under "quantization", as
// hf_quant_config.json writes it.
type modeloptScheme struct{}

var modeloptLayouts = []layout{{
	encoding: "modelopt", data: ".weight", weight: ".weight", shared: true,
	parts: []companion{{Scale, []string{".weight_scale"}}, {GlobalScale, []string{".weight_scale_2"}}, {InputScale, []string{".input_scale"}}},
}}

func init() { RegisterScheme(modeloptScheme{}) }

func (modeloptScheme) Name() string { return "modelopt" }

func (modeloptScheme) Bind(config []byte, tensors []tensorfile.TensorInfo) (Bound, error) {
	algo := ""
	var member func(key string, d *strictjson.Decoder) error
	member = func(key string, d *strictjson.Decoder) error {
		switch {
		case key == "quant_algo" && d.Peek() == '"':
			var err error
			algo, err = d.Str()
			algo = strings.ToUpper(algo)
			return err
		case key == "quantization" && d.Peek() == '{':
			return d.Members(func(k string) error { return member(k, d) })
		}
		return d.Skip()
	}
	if err := configMembers(config, member); err != nil {
		return Bound{}, err
	}
	return bindLayouts("modelopt", modeloptLayouts, tensors, func(_ *layout, infos []*tensorfile.TensorInfo, b *Binding) {
		data, scale := infos[0], infos[1]
		switch {
		case data.DType == tensorfile.U8 && len(data.Shape) == 2 && (algo == "" || algo == "NVFP4"):
			cols, ok := mul(data.Shape[1], 2)
			if ok && realize(b, infos, NVFP4ModelOpt, []int{0, 1, 2}, []int{3}, -1, nil) {
				b.Shape = []uint64{data.Shape[0], cols}
			}
		case data.DType == tensorfile.F8_E4M3 && scale != nil && numel(scale) == 1 && infos[2] == nil && (algo == "" || algo == "FP8"):
			k := channelKey{scale.DType, true}
			codec, err := intern(k, func() (Codec, error) { return NewChannelFP8(k.scale, true) })
			if err == nil && realize(b, infos, codec, []int{0, 1}, []int{3}, -1, nil) {
				b.Shape = data.Shape
			}
		}
	}), nil
}
