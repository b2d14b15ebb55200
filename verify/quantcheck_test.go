package verify

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/safetensors"
	"github.com/ckptcheck/ckptcheck/verify/internal/values"
)

const (
	qProj = "model.layers.0.self_attn.q_proj.weight"
	kProj = "model.layers.0.self_attn.k_proj.weight"
)

// quantFindings lists "severity code key" of the quantized_* findings.
func quantFindings(fs []Finding) []string {
	var out []string
	for _, f := range fs {
		switch f.Code {
		case CodeQuantizedScaleMissing, CodeQuantizedScaleShape, CodeQuantizedScaleUnused, CodeQuantizedConfig:
			out = append(out, fmt.Sprintf("%s %s %s", f.Severity, f.Code, f.Key))
		}
	}
	slices.Sort(out)
	return out
}

// TestQuantStructure: validate judges a quantized checkpoint's structure
// from its headers and quantization_config, keyed by the weight: FP8 per
// tensor (the test quantizer) on a [40, 72] weight, and FP8 blocks of
// 128×128 (DeepSeek-V3's weight_scale_inv [⌈out/128⌉, ⌈in/128⌉]) on a
// [200, 72] one, whose last block row is partial. Each negative control
// breaks one thing.
func TestQuantStructure(t *testing.T) {
	norm := bf16Weights("model.norm.weight", 1, 72)
	w, s := quantizeFP8(bf16Weights(qProj, 2, 40, 72), 1)
	k, ks := quantizeFP8(bf16Weights(kProj, 3, 40, 72), 1)
	perTensor := func(ignore ...string) map[string]any {
		return map[string]any{"model_type": "llama", "quantization_config": map[string]any{"quant_method": testFP8Method, "ignore": ignore}}
	}
	block := func(size ...int) map[string]any {
		qc := map[string]any{"quant_method": "fp8", "fmt": "e4m3"}
		if size != nil {
			qc["weight_block_size"] = size
		}
		return map[string]any{"model_type": "deepseek_v3", "quantization_config": qc}
	}
	fp8Block := raw(qProj, safetensors.F8_E4M3, 200, 72)
	scaleInv := func(shape ...uint64) fixture.Tensor {
		return raw("model.layers.0.self_attn.q_proj.weight_scale_inv", safetensors.F32, shape...)
	}
	cases := []struct {
		name    string
		tensors []fixture.Tensor
		shards  int
		config  map[string]any
		want    []string
	}{
		{"faithful", []fixture.Tensor{norm, w, s, k, ks}, 1, perTensor(), nil},
		{"scale in another shard", []fixture.Tensor{norm, k, ks, w, s}, 2, perTensor(), nil},
		{"scale missing", []fixture.Tensor{norm, w, k, ks}, 1, perTensor(), []string{"error quantized_scale_missing " + qProj}},
		{"scale shape", []fixture.Tensor{norm, w, raw(qProj+"_scale", safetensors.F32, 2), k, ks}, 1, perTensor(),
			[]string{"error quantized_scale_shape " + qProj}},
		{"scale unused", []fixture.Tensor{norm, w, s, k, ks, raw("model.layers.0.mlp.up_proj.weight_scale", safetensors.F32, 1)}, 1, perTensor(),
			[]string{"warning quantized_scale_unused model.layers.0.mlp.up_proj.weight_scale"}},
		{"ignored yet quantized", []fixture.Tensor{norm, w, s, k, ks}, 1, perTensor("re:.*q_proj$"),
			[]string{"warning quantized_config_mismatch " + qProj}},
		{"linear left unquantized", []fixture.Tensor{norm, w, s, bf16Weights(kProj, 3, 40, 72)}, 1, perTensor(),
			[]string{"warning quantized_config_mismatch " + kProj}},
		{"linear left unquantized, ignored", []fixture.Tensor{norm, w, s, bf16Weights(kProj, 3, 40, 72)}, 1, perTensor("re:.*k_proj"), nil},
		{"block, partial last row", []fixture.Tensor{norm, fp8Block, scaleInv(2, 1)}, 1, block(128, 128), nil},
		{"block, last row dropped", []fixture.Tensor{norm, fp8Block, scaleInv(1, 1)}, 1, block(128, 128),
			[]string{"error quantized_scale_shape " + qProj}},
		{"block size contradicted", []fixture.Tensor{norm, fp8Block, scaleInv(4, 2)}, 1, block(128, 128),
			[]string{"warning quantized_config_mismatch " + qProj}},
		{"block weight without scales", []fixture.Tensor{norm, fp8Block, raw(kProj, safetensors.F8_E4M3, 40, 72), raw("model.layers.0.self_attn.k_proj.weight_scale_inv", safetensors.F32, 1, 1)}, 1, block(),
			[]string{"error quantized_scale_missing " + qProj}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "model")
			if err := fixture.WriteSharded(dir, c.tensors, c.shards, c.config); err != nil {
				t.Fatal(err)
			}
			fs, err := Validate(context.Background(), openCheckpoint(t, dir))
			if err != nil {
				t.Fatal(err)
			}
			if got := quantFindings(fs); !slices.Equal(got, c.want) {
				t.Errorf("findings %q, want %q (%v)", got, c.want, fs)
			}
		})
	}
}

// TestQuantValues: diff --values decodes an FP8 per-tensor export (the test
// quantizer, on [40, 72] and [3, 200] weights) against its BF16 source and
// judges it by half a step an element. Negative controls: a scale ×2, the
// weight of another layer, and an export whose values are BF16 but a
// quarter step off.
func TestQuantValues(t *testing.T) {
	norm := bf16Weights("model.norm.weight", 1, 72)
	src := []fixture.Tensor{norm, bf16Weights(qProj, 2, 40, 72), bf16Weights(kProj, 3, 3, 200)}
	cfg := map[string]any{"model_type": "llama", "quantization_config": map[string]any{"quant_method": testFP8Method}}
	pub := filepath.Join(t.TempDir(), "published")
	if err := fixture.WriteSharded(pub, src, 1, nil); err != nil {
		t.Fatal(err)
	}
	quantized := func(mult float32, swap bool) []fixture.Tensor {
		out := []fixture.Tensor{norm}
		for i, x := range src[1:] {
			w, s := quantizeFP8(x, 1)
			if i == 0 {
				_, s = quantizeFP8(x, mult)
			}
			out = append(out, w, s)
		}
		if swap { // q_proj's bytes from k_proj: another layer's weight of the same size
			o, _ := quantizeFP8(bf16Weights(qProj, 9, 40, 72), 1)
			out[1].Data = o.Data
		}
		return out
	}
	cases := []struct {
		name    string
		tensors []fixture.Tensor
		want    []string
	}{
		{"faithful", quantized(1, false), nil},
		{"scale x2", quantized(2, false), []string{"error quantization_error " + qProj}},
		{"another weight", quantized(1, true), []string{"error quantization_error " + qProj, "error reinitialized " + qProj}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := diffPaths(t, pub, export(t, c.tensors, cfg), DiffOptions{WeightsOnly: true})
			if got := notable(d.Findings); len(got) != 0 {
				t.Fatalf("structure: %v", d.Findings)
			}
			rep, err := d.CompareValues(context.Background(), ValueOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := notable(rep.Findings); !slices.Equal(got, c.want) {
				t.Errorf("findings %q, want %q", got, c.want)
			}
			for _, s := range rep.Tensors {
				if s.Key == qProj || s.Key == kProj {
					if s.Encoding != "F8_E4M3 per-tensor" || s.Quantization == nil || s.Quantization.Bound != "elementwise" {
						t.Errorf("%s: %+v", s.Key, s)
					}
					if c.want == nil && (s.Quantization.MaxStepRatio > 1+values.StepMargin || !s.Quantization.Within) {
						t.Errorf("%s: faithful but %+v", s.Key, s.Quantization)
					}
				}
			}
			if rep.Compared != 3 {
				t.Errorf("%d compared, want 3", rep.Compared)
			}
		})
	}
}

// TestQuantInspect: inspect lists one logical tensor a quantized weight,
// its encoding shown, its logical shape and parameters, the bytes of all
// its parts; its scale is no row of its own.
func TestQuantInspect(t *testing.T) {
	w, s := quantizeFP8(bf16Weights(qProj, 2, 40, 72), 1)
	dir := filepath.Join(t.TempDir(), "model")
	cfg := map[string]any{"model_type": "llama", "quantization_config": map[string]any{"quant_method": testFP8Method}}
	if err := fixture.WriteSharded(dir, []fixture.Tensor{bf16Weights("model.norm.weight", 1, 72), s, w}, 2, cfg); err != nil {
		t.Fatal(err)
	}
	ins := Inspect(openCheckpoint(t, dir), nil, false)
	var names []string
	for _, r := range ins.Tensors {
		names = append(names, r.Name)
		if r.Name == qProj && (r.Encoding != "F8_E4M3 per-tensor" || r.Parameters != 40*72 || r.Bytes != 40*72+4 || !slices.Equal(r.Shape, []uint64{40, 72})) {
			t.Errorf("%+v", r)
		}
	}
	if !slices.Equal(names, []string{qProj, "model.norm.weight"}) || ins.Totals.Tensors != 2 || ins.Totals.Parameters != 72+40*72 {
		t.Errorf("rows %q, totals %+v", names, ins.Totals)
	}
}
