package verify

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/internal/textfmt"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

func raw(name string, dtype safetensors.DType, shape ...uint64) fixture.Tensor {
	n := uint64(dtype.Bits() / 8)
	for _, d := range shape {
		n *= d
	}
	return fixture.Tensor{Name: name, DType: dtype, Shape: shape, Data: make([]byte, n)}
}

// TestLoRAAdapter: a PEFT LoRA adapter as huggingface/peft saves it
// (src/peft/utils/save_and_load.py, tuners/lora/layer.py @ v0.20.0:
// adapter_model.safetensors with base_model.model.<module>.lora_A.weight
// [r, in] and lora_B.weight [out, r], adapter_config.json) is diagnosed
// once, instead of every base weight missing and low_key_overlap.
func TestLoRAAdapter(t *testing.T) {
	const r = 8
	var lora []fixture.Tensor
	for i := range fixture.Tiny.Layers {
		for _, p := range []string{"q_proj", "v_proj"} {
			m := fmt.Sprintf("base_model.model.model.layers.%d.self_attn.%s.", i, p)
			out := uint64(fixture.Tiny.Heads * fixture.Tiny.HeadDim)
			if p == "v_proj" {
				out = uint64(fixture.Tiny.KVHeads * fixture.Tiny.HeadDim)
			}
			lora = append(lora, raw(m+"lora_A.weight", safetensors.F32, r, uint64(fixture.Tiny.Hidden)),
				raw(m+"lora_B.weight", safetensors.F32, out, r))
		}
	}
	for _, withConfig := range []bool{true, false} {
		dir := filepath.Join(t.TempDir(), "adapter")
		if err := fixture.WriteFile(filepath.Join(dir, "adapter_model.safetensors"), lora, nil); err != nil {
			t.Fatal(err)
		}
		want := "(no adapter_config.json beside it says for which model)"
		if withConfig {
			cfg := `{"peft_type": "LORA", "base_model_name_or_path": "Qwen/Qwen3-0.6B", "r": 8, "lora_alpha": 16, "target_modules": ["q_proj", "v_proj"]}`
			os.WriteFile(filepath.Join(dir, "adapter_config.json"), []byte(cfg), 0o644)
			want = "for Qwen/Qwen3-0.6B"
		}
		d := diffPaths(t, published(t), dir, DiffOptions{WeightsOnly: true})
		if got := codeList(d.Findings); !slices.Equal(got, []string{"lora_adapter"}) {
			t.Fatalf("config %v: findings %v", withConfig, d.Findings)
		}
		f := d.Findings[0]
		if f.Severity != Error || f.Side != Exported || !strings.Contains(f.Message, "a LoRA adapter "+want) ||
			!strings.Contains(f.Message, "merge it into the base before diffing") || !strings.Contains(f.Message, "8 low-rank pairs") {
			t.Errorf("config %v: %+v", withConfig, f)
		}
	}
}

// TestQuantizedUnsupported: an FP8 block-quantized published checkpoint
// (DeepSeek-V3's layout: X.weight F8_E4M3 beside X.weight_scale_inv F32
// [ceil(out/128), ceil(in/128)], quantization_config in config.json;
// deepseek-ai/DeepSeek-V3 inference/fp8_cast_bf16.py) against a BF16
// export dequantized by its trainer, and an MXFP4 one (gpt-oss's
// mlp.experts.gate_up_proj_blocks and _scales, transformers
// integrations/mxfp4.py) against a dequantized export: one warning each,
// no missing keys, one logical tensor a weight (its companions bound to
// it), and the weights' values are skipped, not compared. gpt-oss's
// expert stacks now decode (TestQuantE2EMXFP4): the MXFP4 case is a stack
// of rank 4, whose dequantization (transformers swaps dimensions 1 and 2)
// is no matrix transpose the engine reads.
func TestQuantizedUnsupported(t *testing.T) {
	norm := fixture.Tensor{Name: "model.norm.weight", DType: safetensors.BF16, Shape: []uint64{4}, Data: []byte{1, 2, 3, 4, 5, 6, 7, 8}}
	tests := []struct {
		name      string
		pub, exp  []fixture.Tensor
		qc        map[string]any
		method    string
		compared  int
		skipped   int
		weights   int
		companion int
	}{
		// FP8 block scales now decode (quant.BlockFP8): a dequantized
		// export compares by value (TestQuantSchemesBind, TestQuantValues).
		{"mxfp4 blocks and scales",
			[]fixture.Tensor{norm, raw("model.layers.0.mlp.experts.gate_up_proj_blocks", safetensors.U8, 2, 2, 8, 2, 16),
				raw("model.layers.0.mlp.experts.gate_up_proj_scales", safetensors.U8, 2, 2, 8, 2),
				raw("model.layers.0.mlp.experts.gate_up_proj_bias", safetensors.BF16, 2, 8)},
			// dequantized as transformers does: dimensions 1 and 2 swapped
			[]fixture.Tensor{norm, raw("model.layers.0.mlp.experts.gate_up_proj", safetensors.BF16, 2, 8, 2, 64),
				raw("model.layers.0.mlp.experts.gate_up_proj_bias", safetensors.BF16, 2, 8)},
			map[string]any{"quant_method": "mxfp4"}, "quantization_config mxfp4", 2, 1, 1, 1},
	}
	for _, tt := range tests {
		pub := filepath.Join(t.TempDir(), "published")
		cfg := map[string]any{"model_type": "deepseek_v3", "quantization_config": tt.qc}
		if err := fixture.WriteSharded(pub, tt.pub, 1, cfg); err != nil {
			t.Fatal(err)
		}
		d := diffPaths(t, pub, export(t, tt.exp, nil), DiffOptions{WeightsOnly: true})
		if got := codeList(d.Findings); !slices.Equal(got, []string{"quantized_unsupported"}) {
			t.Fatalf("%s: findings %v", tt.name, d.Findings)
		}
		f := d.Findings[0]
		if f.Severity != Warning || !strings.Contains(f.Message, "the published side ("+tt.method+") quantized") ||
			!strings.Contains(f.Message, fmt.Sprintf("%s not compared yet, with the %s bound", textfmt.Plural(tt.weights, "weight"), textfmt.Plural(tt.companion, "scale or block tensor"))) {
			t.Errorf("%s: %+v", tt.name, f)
		}
		rep, err := d.CompareValues(context.Background(), ValueOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Skipped != tt.skipped || len(rep.Findings) != 0 || rep.Compared != tt.compared {
			t.Errorf("%s: values %+v", tt.name, rep)
		}
	}
}

// TestNotQuantized: a model's own tensor that happens to be named like a
// quantization companion is no evidence: without a quantization_config or
// low-bit tensors, a missing one is a missing key.
func TestNotQuantized(t *testing.T) {
	norm := fixture.Tensor{Name: "model.norm.weight", DType: safetensors.BF16, Shape: []uint64{4}, Data: []byte{1, 2, 3, 4, 5, 6, 7, 8}}
	pub := filepath.Join(t.TempDir(), "published")
	if err := fixture.WriteSharded(pub, []fixture.Tensor{norm, raw("model.layers.0.mixer.scales", safetensors.F32, 4)}, 1, map[string]any{"model_type": "x"}); err != nil {
		t.Fatal(err)
	}
	d := diffPaths(t, pub, export(t, []fixture.Tensor{norm}, nil), DiffOptions{WeightsOnly: true})
	if got := notable(d.Findings); !slices.Equal(got, []string{"error missing_key model.layers.0.mixer.scales"}) {
		t.Errorf("%v", got)
	}
}

// TestNeedsAdapter: the export's names are checked against what
// transformers loads: silent with hf, a warning naming each adapter and
// how many tensors it mapped otherwise.
func TestNeedsAdapter(t *testing.T) {
	bf16 := fixture.Tiny.Tensors(safetensors.BF16)
	renamed := slices.Clone(bf16)
	for i := range renamed {
		renamed[i].Name = "_orig_mod." + renamed[i].Name
	}
	d := diffPaths(t, published(t), export(t, renamed, nil), DiffOptions{WeightsOnly: true})
	if len(d.Findings) != 1 || d.Findings[0].Code != CodeNeedsAdapter ||
		!strings.Contains(d.Findings[0].Message, fmt.Sprintf("through adapter compile (compile mapped %d of the %d matching tensors)", len(bf16), len(bf16))) {
		t.Errorf("%v", d.Findings)
	}
	if d := diffPaths(t, published(t), export(t, bf16, nil), DiffOptions{WeightsOnly: true}); len(d.Findings) != 0 {
		t.Errorf("hf: %v", d.Findings)
	}
}

// TestTieDefaultByModelType: a config without tie_word_embeddings means
// the model class's default: Qwen3's is false, so an export without the
// head misses it; Gemma's is true, so it is tied.
func TestTieDefaultByModelType(t *testing.T) {
	q := fixture.Tiny
	q.Tied = false
	for _, tt := range []struct {
		modelType string
		want      string
	}{{"qwen3", "error missing_key lm_head.weight"}, {"gemma", "info tied_weight lm_head.weight"}} {
		cfg := q.Config("bfloat16")
		delete(cfg, "tie_word_embeddings")
		cfg["model_type"] = tt.modelType
		pub := filepath.Join(t.TempDir(), "published")
		if err := fixture.WriteSharded(pub, q.Tensors(safetensors.BF16), 2, cfg); err != nil {
			t.Fatal(err)
		}
		exp := slices.DeleteFunc(q.Tensors(safetensors.BF16), func(x fixture.Tensor) bool { return x.Name == LMHead })
		d := diffPaths(t, pub, export(t, exp, nil), DiffOptions{WeightsOnly: true})
		if got := notable(d.Findings); !slices.Equal(got, []string{tt.want}) {
			t.Errorf("%s: %v", tt.modelType, got)
		}
		if !strings.Contains(d.Tie.Source, "src/transformers/models/"+tt.modelType+"/configuration_"+tt.modelType+".py") {
			t.Errorf("%s: tie source %q", tt.modelType, d.Tie.Source)
		}
	}
}

// TestLoRAAdapterLayouts: a plain diff recognises an adapter in each
// layout loralayout.go reads, torchtune's own names (attn.output_proj,
// mlp.w1/w2/w3, output, DoRA's .magnitude) and mlx-lm's with its
// periodic snapshots included, as one lora_adapter that names the layout,
// how its trainer merges it and its pairs.
func TestLoRAAdapterLayouts(t *testing.T) {
	const r = 8
	h, inter := uint64(fixture.Tiny.Hidden), uint64(fixture.Tiny.Intermediate)
	pair := func(a, b string, in, out uint64) []fixture.Tensor {
		return []fixture.Tensor{raw(a, safetensors.F32, r, in), raw(b, safetensors.F32, out, r)}
	}
	var tune []fixture.Tensor
	for i := range fixture.Tiny.Layers {
		for _, m := range []struct {
			name    string
			in, out uint64
		}{{"attn.q_proj", h, h}, {"attn.k_proj", h, h / 2}, {"attn.v_proj", h, h / 2}, {"attn.output_proj", h, h},
			{"mlp.w1", h, inter}, {"mlp.w3", h, inter}, {"mlp.w2", inter, h}} {
			p := fmt.Sprintf("layers.%d.%s.", i, m.name)
			tune = append(append(tune, pair(p+"lora_a.weight", p+"lora_b.weight", m.in, m.out)...), raw(p+"magnitude", safetensors.F32, m.out))
		}
	}
	tune = append(tune, pair("output.lora_a.weight", "output.lora_b.weight", h, uint64(fixture.Tiny.Vocab))...)
	mlx := pair("model.layers.0.self_attn.q_proj.lora_a", "model.layers.0.self_attn.q_proj.lora_b", h, h)
	for i := range mlx {
		mlx[i].Shape = []uint64{mlx[i].Shape[1], mlx[i].Shape[0]} // [in, r], [r, out]
	}
	peftConfig := `{"peft_type": "LORA", "base_model_name_or_path": "Qwen/Qwen3-0.6B", "r": 8, "lora_alpha": 16, "target_modules": ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj", "lm_head"]}`
	tests := []struct {
		name   string
		files  map[string][]fixture.Tensor
		config string
		want   []string
	}{
		{"torchtune, no config", map[string][]fixture.Tensor{"adapter_model.safetensors": tune}, "",
			[]string{"a torchtune LoRA adapter (no adapter_config.json beside it says for which model), not a model",
				"save_adapter_weights_only", fmt.Sprintf("it holds %d low-rank pairs", 7*fixture.Tiny.Layers+1)}},
		{"torchtune, peft config", map[string][]fixture.Tensor{"adapter_model.safetensors": tune}, peftConfig,
			[]string{"a torchtune LoRA adapter for Qwen/Qwen3-0.6B", fmt.Sprintf("%d low-rank pairs of rank 8", 7*fixture.Tiny.Layers+1)}},
		{"mlx-lm with a snapshot", map[string][]fixture.Tensor{"adapters.safetensors": mlx, "0000100_adapters.safetensors": mlx}, "",
			[]string{"an mlx-lm LoRA adapter", "mlx_lm.fuse", "it holds 1 low-rank pair"}},
	}
	for _, tt := range tests {
		dir := filepath.Join(t.TempDir(), "adapter")
		for name, ts := range tt.files {
			if err := fixture.WriteFile(filepath.Join(dir, name), ts, nil); err != nil {
				t.Fatal(err)
			}
		}
		if tt.config != "" {
			if err := os.WriteFile(filepath.Join(dir, "adapter_config.json"), []byte(tt.config), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		d := diffPaths(t, published(t), dir, DiffOptions{WeightsOnly: true})
		if got := codeList(d.Findings); !slices.Equal(got, []string{"lora_adapter"}) {
			t.Fatalf("%s: findings %v", tt.name, d.Findings)
		}
		f := d.Findings[0]
		for _, w := range tt.want {
			if f.Severity != Error || f.Side != Exported || !strings.Contains(f.Message, w) {
				t.Errorf("%s: want %q in %+v", tt.name, w, f)
			}
		}
	}
}

// TestLoRAPairs: pairs are counted once per module, in the layout readLoRA
// would choose (peft, then mlx-lm, then torchtune), and peft names outside
// base_model.model. still count as peft's.
func TestLoRAPairs(t *testing.T) {
	tests := []struct {
		names  []string
		layout loraLayout
		pairs  int
	}{
		{[]string{"model.norm.weight"}, layoutPEFT, 0},
		{[]string{"base_model.model.x.q_proj.lora_A.weight", "base_model.model.x.q_proj.lora_B.weight", "base_model.model.x.q_proj.lora_magnitude_vector"}, layoutPEFT, 1},
		{[]string{"base_model.model.model.embed_tokens.lora_embedding_A", "x.lora_A.default.weight"}, layoutPEFT, 2},
		{[]string{"layers.0.attn.q_proj.lora_a.weight", "layers.0.mlp.w2.lora_a.weight", "layers.0.mlp.w2.magnitude", "output.lora_a.weight"}, layoutTorchtune, 3},
		{[]string{"layers.0.attn.q_proj.lora_a.weight", "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight"}, layoutPEFT, 1},
		{[]string{"m.q_proj.lora_a", "m.q_proj.lora_a", "m.q_proj.lora_b", "layers.0.mlp.w1.lora_a.weight"}, layoutMLX, 1},
		{[]string{"layers.0.attn.unknown.lora_a.weight"}, layoutMLX, 0},
	}
	for _, tt := range tests {
		var srcs []Source
		for _, n := range tt.names {
			srcs = append(srcs, Source{Tensor: &safetensors.Tensor{TensorInfo: safetensors.TensorInfo{Name: n}}})
		}
		if l, n := loraPairs(srcs); n != tt.pairs || (n > 0 && l != tt.layout) {
			t.Errorf("%v: %s, %d; want %s, %d", tt.names, l, n, tt.layout, tt.pairs)
		}
	}
}
