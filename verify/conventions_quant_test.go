package verify

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// arangeRaw is a tensor of dtype and shape whose bytes count up (1, 2, …,
// 251, 1, …): distinct values for tests that compare bytes.
func arangeRaw(name string, dtype safetensors.DType, shape ...uint64) fixture.Tensor {
	t := raw(name, dtype, shape...)
	for i := range t.Data {
		t.Data[i] = byte(i%251 + 1)
	}
	return t
}

// A quantLayout is one quantization scheme's tensors for one linear
// model.layers.0.mlp.down_proj [out 8, in 64], as the cited code saves it.
type quantLayout struct {
	name, source string
	config       map[string]any // config.json fields beside model_type
	parts        []fixture.Tensor
	scale        string // a companion the negative control changes
}

const qWeight = "model.layers.0.mlp.down_proj.weight"

var quantLayouts = []quantLayout{
	{"fp8 block", "deepseek-ai/DeepSeek-V3 inference/fp8_cast_bf16.py (weight_scale_inv)",
		map[string]any{"quantization_config": map[string]any{"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": []int{128, 128}}},
		[]fixture.Tensor{arangeRaw(qWeight, safetensors.F8_E4M3, 8, 64), arangeRaw("model.layers.0.mlp.down_proj.weight_scale_inv", safetensors.F32, 1, 1)},
		"model.layers.0.mlp.down_proj.weight_scale_inv"},
	{"compressed-tensors pack-quantized", "vllm-project/compressed-tensors src/compressed_tensors/compressors/quantized_compressors/pack_quantized.py",
		map[string]any{"quantization_config": map[string]any{"quant_method": "compressed-tensors", "format": "pack-quantized",
			"config_groups": map[string]any{"group_0": map[string]any{"targets": []string{"Linear"},
				"weights": map[string]any{"num_bits": 4, "type": "int", "symmetric": true, "strategy": "group", "group_size": 64}}}}},
		[]fixture.Tensor{arangeRaw("model.layers.0.mlp.down_proj.weight_packed", safetensors.I32, 8, 8),
			arangeRaw("model.layers.0.mlp.down_proj.weight_scale", safetensors.BF16, 8, 1),
			arangeRaw("model.layers.0.mlp.down_proj.weight_zero_point", safetensors.I32, 8, 1),
			i64Tensor("model.layers.0.mlp.down_proj.weight_shape", 8, 64)},
		"model.layers.0.mlp.down_proj.weight_scale"},
	{"bitsandbytes nf4", "bitsandbytes/functional.py QuantState.as_dict(packed=True)",
		map[string]any{"quantization_config": map[string]any{"quant_method": "bitsandbytes", "load_in_4bit": true}},
		[]fixture.Tensor{arangeRaw(qWeight, safetensors.U8, 256, 1),
			arangeRaw(qWeight+".absmax", safetensors.U8, 8), arangeRaw(qWeight+".quant_map", safetensors.F32, 16),
			arangeRaw(qWeight+".nested_absmax", safetensors.F32, 1), arangeRaw(qWeight+".nested_quant_map", safetensors.F32, 256),
			jsonTensor(qWeight+".quant_state.bitsandbytes__nf4", `{"quant_type": "nf4", "blocksize": 64, "dtype": "bfloat16", "shape": [8, 64], "nested_blocksize": 256, "nested_dtype": "float32", "nested_offset": 0.03}`)},
		qWeight + ".absmax"},
	{"bitsandbytes int8", "bitsandbytes/nn/modules.py Linear8bitLt._save_to_state_dict",
		map[string]any{"quantization_config": map[string]any{"quant_method": "bitsandbytes", "load_in_8bit": true}},
		[]fixture.Tensor{arangeRaw(qWeight, safetensors.I8, 8, 64), arangeRaw("model.layers.0.mlp.down_proj.SCB", safetensors.F32, 8),
			arangeRaw("model.layers.0.mlp.down_proj.weight_format", safetensors.U8)},
		"model.layers.0.mlp.down_proj.SCB"},
	{"gptq", "ModelCloud/GPTQModel gptqmodel/nn_modules/qlinear/__init__.py",
		map[string]any{"quantization_config": map[string]any{"quant_method": "gptq", "bits": 4, "group_size": 32}},
		[]fixture.Tensor{arangeRaw("model.layers.0.mlp.down_proj.qweight", safetensors.I32, 8, 8),
			arangeRaw("model.layers.0.mlp.down_proj.qzeros", safetensors.I32, 2, 1),
			arangeRaw("model.layers.0.mlp.down_proj.scales", safetensors.F16, 2, 8),
			gIdx("model.layers.0.mlp.down_proj.g_idx", 64, 32)},
		"model.layers.0.mlp.down_proj.scales"},
	{"awq", "casper-hansen/AutoAWQ awq/modules/linear/gemm.py WQLinear_GEMM",
		map[string]any{"quantization_config": map[string]any{"quant_method": "awq", "bits": 4, "group_size": 32}},
		[]fixture.Tensor{arangeRaw("model.layers.0.mlp.down_proj.qweight", safetensors.I32, 64, 1),
			arangeRaw("model.layers.0.mlp.down_proj.qzeros", safetensors.I32, 2, 1),
			arangeRaw("model.layers.0.mlp.down_proj.scales", safetensors.F16, 2, 8)},
		"model.layers.0.mlp.down_proj.scales"},
	{"mlx affine", "ml-explore/mlx python/mlx/nn/layers/quantized.py QuantizedLinear; mlx-lm's config \"quantization\"",
		map[string]any{"quantization": map[string]any{"group_size": 64, "bits": 4}},
		[]fixture.Tensor{arangeRaw(qWeight, safetensors.U32, 8, 8),
			arangeRaw("model.layers.0.mlp.down_proj.scales", safetensors.BF16, 8, 1),
			arangeRaw("model.layers.0.mlp.down_proj.biases", safetensors.BF16, 8, 1)},
		"model.layers.0.mlp.down_proj.biases"},
}

// TestQuantSchemesBind: each scheme's quantized linear is one logical
// weight. Against a dequantized export it is one quantized_unsupported,
// not a wall of unexpected or missing companions; an export that lacks the
// weight misses it (missing_key, plus the note); an export storing it alike
// compares as it is, and a changed scale is a value_mismatch (the negative
// control).
func TestQuantSchemesBind(t *testing.T) {
	norm := arangeRaw("model.norm.weight", safetensors.BF16, 8)
	for _, q := range quantLayouts {
		t.Run(q.name, func(t *testing.T) {
			cfg := map[string]any{"model_type": "llama"}
			for k, v := range q.config {
				cfg[k] = v
			}
			pub := filepath.Join(t.TempDir(), "published")
			if err := fixture.WriteSharded(pub, append([]fixture.Tensor{norm}, q.parts...), 1, cfg); err != nil {
				t.Fatal(err)
			}
			dequantized := []fixture.Tensor{norm, arangeRaw(qWeight, safetensors.BF16, 8, 64)}
			d := diffPaths(t, pub, export(t, dequantized, nil), DiffOptions{WeightsOnly: true})
			// A weight whose codec decodes is compared against the
			// dequantized export (by --values); one that does not is
			// said once.
			w, _ := d.Published.View.Tensor(qWeight)
			if decodes(w) {
				if got := notable(d.Findings); len(got) != 0 {
					t.Fatalf("%s: dequantized export of a decoded scheme: %v", q.source, d.Findings)
				}
			} else {
				if got := notable(d.Findings); !slices.Equal(got, []string{"warning quantized_unsupported "}) {
					t.Fatalf("%s: dequantized export: %v", q.source, d.Findings)
				}
				if m := d.Findings[0].Message; !strings.Contains(m, "1 weight not compared yet") {
					t.Errorf("%s: %s", q.source, m)
				}
			}
			if n := len(d.Published.View.Tensors); n != 2 {
				t.Errorf("%s: %d logical tensors, want the norm and one weight", q.source, n)
			}

			d = diffPaths(t, pub, export(t, []fixture.Tensor{norm}, nil), DiffOptions{WeightsOnly: true})
			if got := notable(d.Findings); !slices.Equal(got, []string{"error missing_key " + qWeight, "warning quantized_unsupported "}) {
				t.Errorf("%s: export without the weight: %v", q.source, got)
			}

			d = diffPaths(t, pub, export(t, append([]fixture.Tensor{norm}, q.parts...), nil), DiffOptions{WeightsOnly: true})
			if len(d.Findings) != 0 {
				t.Errorf("%s: stored alike: %v", q.source, d.Findings)
			}
			rep, err := d.CompareValues(context.Background(), ValueOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if want := 1 + len(q.parts); rep.Compared != want || rep.BitIdentical != want || len(rep.Findings) != 0 {
				t.Errorf("%s: stored alike: %d compared, %d bit-identical, want %d; %v", q.source, rep.Compared, rep.BitIdentical, want, rep.Findings)
			}

			broken := slices.Clone(q.parts)
			for i, p := range broken {
				if p.Name == q.scale {
					p.Data = slices.Clone(p.Data)
					p.Data[0] ^= 0x40
					broken[i] = p
				}
			}
			d = diffPaths(t, pub, export(t, append([]fixture.Tensor{norm}, broken...), nil), DiffOptions{WeightsOnly: true})
			rep, err = d.CompareValues(context.Background(), ValueOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := notable(rep.Findings); len(got) != 1 || !strings.HasSuffix(got[0], " "+q.scale) {
				t.Errorf("%s: negative control: %v", q.source, got)
			}
		})
	}
}

// gptOSS is a published gpt-oss checkpoint (transformers
// models/gpt_oss/modeling_gpt_oss.py; openai/gpt-oss-20b's files): MXFP4
// experts stored as mlp.experts.{gate_up,down}_proj_blocks U8 [E, out,
// in/32, 16] and _scales U8 [E, out, in/32] beside their BF16 biases, the
// rest BF16; config.json's quantization_config {"quant_method": "mxfp4"}.
func gptOSS() (pub []fixture.Tensor, bf16 func(string, ...uint64) fixture.Tensor) {
	const e, hidden, inter, vocab = 2, 32, 32, 16
	bf16 = func(name string, shape ...uint64) fixture.Tensor { return arangeRaw(name, safetensors.BF16, shape...) }
	pub = []fixture.Tensor{bf16("model.embed_tokens.weight", vocab, hidden), bf16("model.norm.weight", hidden), bf16("lm_head.weight", vocab, hidden)}
	for l := range 2 {
		p := fmt.Sprintf("model.layers.%d.", l)
		for _, x := range []string{"q", "k", "v", "o"} {
			pub = append(pub, bf16(p+"self_attn."+x+"_proj.weight", hidden, hidden), bf16(p+"self_attn."+x+"_proj.bias", hidden))
		}
		pub = append(pub, bf16(p+"self_attn.sinks", 4), bf16(p+"input_layernorm.weight", hidden), bf16(p+"post_attention_layernorm.weight", hidden),
			bf16(p+"mlp.router.weight", e, hidden), bf16(p+"mlp.router.bias", e),
			arangeRaw(p+"mlp.experts.gate_up_proj_blocks", safetensors.U8, e, 2*inter, hidden/32, 16),
			arangeRaw(p+"mlp.experts.gate_up_proj_scales", safetensors.U8, e, 2*inter, hidden/32),
			bf16(p+"mlp.experts.gate_up_proj_bias", e, 2*inter),
			arangeRaw(p+"mlp.experts.down_proj_blocks", safetensors.U8, e, hidden, inter/32, 16),
			arangeRaw(p+"mlp.experts.down_proj_scales", safetensors.U8, e, hidden, inter/32),
			bf16(p+"mlp.experts.down_proj_bias", e, hidden))
	}
	return pub, bf16
}

// TestTorchtitanGptOSSDropsExperts reproduces torchtitan's gpt-oss to_hf at
// HEAD (pytorch/torchtitan torchtitan/models/gpt_oss/state_dict_adapter.py
// @ 00d1c0e4): its map inverts from_hf_map, whose expert entries are
// "layers.{}.moe.experts.mlp1_weight" (mlp1_bias, mlp2_weight, mlp2_bias),
// while the model's parameters are
// layers.{}.moe.routed_experts.inner_experts.mlp1_weight_EGD, mlp1_bias_EG,
// mlp2_weight_EDF, mlp2_bias_ED since 200100e7 (model/moe.py); to_hf skips
// every key not in its map ("if abstract_key not in to_hf_map: continue"),
// so the export holds everything but the experts. Every dropped expert
// weight is a missing_key on the weight, never folded into
// quantized_unsupported, and the experts' blocks and scales are no
// separate keys. The negative control (two o_proj rows swapped) must fail on
// values.
func TestTorchtitanGptOSSDropsExperts(t *testing.T) {
	pub, _ := gptOSS()
	cfg := map[string]any{"model_type": "gpt_oss", "tie_word_embeddings": false,
		"quantization_config": map[string]any{"quant_method": "mxfp4", "modules_to_not_convert": []string{"model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"}}}
	dir := filepath.Join(t.TempDir(), "published")
	if err := fixture.WriteSharded(dir, pub, 2, cfg); err != nil {
		t.Fatal(err)
	}
	exported := slices.DeleteFunc(slices.Clone(pub), func(x fixture.Tensor) bool { return strings.Contains(x.Name, ".mlp.experts.") })
	d := diffPaths(t, dir, export(t, exported, nil), DiffOptions{WeightsOnly: true})
	var want []string
	for l := range 2 {
		for _, w := range []string{"gate_up_proj", "gate_up_proj_bias", "down_proj", "down_proj_bias"} {
			want = append(want, fmt.Sprintf("error missing_key model.layers.%d.mlp.experts.%s", l, w))
		}
	}
	want = append(want, "warning quantized_unsupported ")
	slices.Sort(want)
	if got := notable(d.Findings); !slices.Equal(got, want) {
		t.Fatalf("findings %q, want %q", got, want)
	}
	for _, f := range d.Findings {
		if f.Code == CodeQuantizedUnsupported && (len(f.Keys) != 0 || !strings.Contains(f.Message, "4 quantized weights of the published side not in the other (each a missing_key)")) {
			t.Errorf("%+v", f)
		}
	}
	rep, err := d.CompareValues(context.Background(), ValueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := len(exported); rep.Compared != want || rep.BitIdentical != want || len(rep.Findings) != 0 {
		t.Errorf("%d compared, %d bit-identical, want %d; %v", rep.Compared, rep.BitIdentical, want, rep.Findings)
	}
	broken := slices.Clone(exported)
	for i, x := range broken {
		if x.Name == "model.layers.1.self_attn.o_proj.weight" {
			x.Data = slices.Clone(x.Data) // rows 0 and 1 swapped
			row := len(x.Data) / 32
			for j := range row {
				x.Data[j], x.Data[row+j] = x.Data[row+j], x.Data[j]
			}
			broken[i] = x
		}
	}
	d = diffPaths(t, dir, export(t, broken, nil), DiffOptions{WeightsOnly: true})
	rep, err = d.CompareValues(context.Background(), ValueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := notable(rep.Findings); len(got) != 1 || !strings.HasSuffix(got[0], " model.layers.1.self_attn.o_proj.weight") {
		t.Errorf("negative control: %v", got)
	}
}
