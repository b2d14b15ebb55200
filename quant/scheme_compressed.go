package quant

import (
	"regexp"
	"strings"

	"github.com/ckptcheck/ckptcheck/internal/strictjson"
	"github.com/ckptcheck/ckptcheck/tensorfile"
)

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
//
// The config group of a weight is the first whose "re:" target matches its
// module, else the first with a plain target (a class name such as
// "Linear", which the names cannot check); its format is the group's, else
// the config's. Decoded: pack-quantized int 2/4/8 (PackQuantized, a
// Resolver of weight_shape), nvfp4-pack-quantized (NVFP4CompressedTensors)
// and float-quantized FP8 per tensor, per channel (ChannelFP8) and F32
// blocks (BlockFP8). Without a config, FP8 weights are read by their
// scale's shape. Everything else stays Unsupported.
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

// ctWeights is a config group's "weights" quantization args and format.
type ctWeights struct {
	present            bool
	numBits, groupSize uint64
	typ, strategy      string
	symmetric          bool
	block              []uint64
	format             string
	targets            []string
	patterns           []*regexp.Regexp
	hasPlainTarget     bool
}

type ctConfig struct {
	format string
	groups []ctWeights
}

func parseCompressed(config []byte) (ctConfig, error) {
	var c ctConfig
	err := configMembers(config, func(key string, d *strictjson.Decoder) error {
		switch key {
		case "format":
			if d.Peek() == 'n' {
				return d.Literal("null")
			}
			var err error
			c.format, err = d.Str()
			return err
		case "config_groups":
			if d.Peek() == 'n' {
				return d.Literal("null")
			}
			return d.Members(func(string) error {
				g, err := parseCTGroup(d)
				c.groups = append(c.groups, g)
				return err
			})
		}
		return d.Skip()
	})
	return c, err
}

func parseCTGroup(d *strictjson.Decoder) (ctWeights, error) {
	w := ctWeights{symmetric: true}
	err := d.Members(func(key string) error {
		switch key {
		case "format":
			if d.Peek() == 'n' {
				return d.Literal("null")
			}
			var err error
			w.format, err = d.Str()
			return err
		case "targets":
			return d.Elements(func(int) error {
				t, err := d.Str()
				if err != nil {
					return err
				}
				w.targets = append(w.targets, t)
				if pat, ok := strings.CutPrefix(t, "re:"); ok {
					if re, err := regexp.Compile(`^(?:` + pat + `)`); err == nil { // Python's re.match
						w.patterns = append(w.patterns, re)
					}
				} else {
					w.hasPlainTarget = true
				}
				return nil
			})
		case "weights":
			if d.Peek() == 'n' {
				return d.Literal("null")
			}
			w.present = true
			return d.Members(func(key string) error {
				if d.Peek() == 'n' {
					return d.Literal("null")
				}
				var err error
				switch key {
				case "num_bits":
					w.numBits, err = d.Uint()
				case "group_size":
					w.groupSize, err = jsonGroupSize(d)
				case "type":
					w.typ, err = d.Str()
				case "strategy":
					w.strategy, err = d.Str()
				case "symmetric":
					w.symmetric, err = jsonBool(d)
				case "block_structure":
					w.block, err = jsonUints(d, 2)
				default:
					err = d.Skip()
				}
				return err
			})
		}
		return d.Skip()
	})
	return w, err
}

// group is the config group of module, nil when none has weights.
func (c ctConfig) group(module string) *ctWeights {
	var plain *ctWeights
	for i := range c.groups {
		g := &c.groups[i]
		if !g.present {
			continue
		}
		for _, re := range g.patterns {
			if re.MatchString(module) {
				return g
			}
		}
		if g.hasPlainTarget && plain == nil {
			plain = g
		}
	}
	return plain
}

func (compressedScheme) Bind(config []byte, tensors []tensorfile.TensorInfo) (Bound, error) {
	cfg, err := parseCompressed(config)
	if err != nil {
		return Bound{}, err
	}
	return bindLayouts("compressed-tensors", compressedLayouts, tensors, func(l *layout, infos []*tensorfile.TensorInfo, b *Binding) {
		w := cfg.group(strings.TrimSuffix(b.Weight, ".weight"))
		format := cfg.format
		if w != nil && w.format != "" {
			format = w.format
		}
		if l.data == ".weight_packed" {
			bindCTPacked(format, w, infos, b)
			return
		}
		bindCTScaled(w, infos, b)
	}), nil
}

// packKey, nvfp4Key intern the packed codecs.
type packKey PackQuantizedConfig

func bindCTPacked(format string, w *ctWeights, infos []*tensorfile.TensorInfo, b *Binding) {
	data, scale := infos[0], infos[1]
	switch {
	case format == "nvfp4-pack-quantized" || (w == nil && data.DType == tensorfile.U8):
		if len(data.Shape) != 2 {
			return
		}
		cols, ok := mul(data.Shape[1], 2)
		if ok && realize(b, infos, NVFP4CompressedTensors, []int{0, 1, 3}, []int{2, 4, 5, 6}, -1, nil) {
			b.Shape = []uint64{data.Shape[0], cols}
		}
	case format == "pack-quantized" && w != nil && w.typ == "int":
		q := PackQuantizedConfig{Bits: w.numBits, Scale: tensorfile.BF16, Asymmetric: !w.symmetric, GIdx: infos[4] != nil}
		switch w.strategy {
		case "group":
			q.GroupSize = w.groupSize
		case "channel":
		default:
			return
		}
		if scale != nil {
			q.Scale = scale.DType
		}
		codec, err := intern(packKey(q), func() (Codec, error) { return NewPackQuantized(q) })
		if err != nil {
			return
		}
		decoded, carried := []int{0, 1}, []int{3, 5, 6}
		if q.Asymmetric {
			decoded = append(decoded, 2)
		} else {
			carried = append(carried, 2)
		}
		if q.GIdx {
			decoded = append(decoded, 4)
		}
		realize(b, infos, codec, decoded, carried, 5, resolveWeightShape)
	}
}

// resolveWeightShape reads weight_shape: the codec stays, the shape is the
// tensor's.
func resolveWeightShape(c Codec, meta []byte) (Codec, []uint64, error) {
	shape, err := i64Shape(c.String(), meta)
	return c, shape, err
}

func bindCTScaled(w *ctWeights, infos []*tensorfile.TensorInfo, b *Binding) {
	data, scale := infos[0], infos[1]
	if data.DType != tensorfile.F8_E4M3 || scale == nil || len(data.Shape) == 0 {
		return
	}
	strategy := ""
	if w != nil {
		if w.typ != "float" || w.numBits != 8 {
			return
		}
		strategy = w.strategy
	} else if n := numel(scale); n == 1 {
		strategy = "tensor"
	} else if n == data.Shape[0] {
		strategy = "channel"
	}
	var codec Codec
	var err error
	switch strategy {
	case "tensor", "channel":
		k := channelKey{scale.DType, strategy == "tensor"}
		codec, err = intern(k, func() (Codec, error) { return NewChannelFP8(k.scale, k.perTensor) })
	case "block":
		if len(w.block) != 2 {
			return
		}
		codec, err = intern(blockKey{w.block[0], w.block[1]}, func() (Codec, error) { return NewBlockFP8(w.block[0], w.block[1]) })
	default:
		return
	}
	if err == nil {
		realize(b, infos, codec, []int{0, 1}, []int{2, 3, 4}, -1, nil)
	}
}
