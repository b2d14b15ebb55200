package verify

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// writeLayoutAdapter writes f's adapter (its targets only, no
// modules_to_save copy) in torchtune's or mlx-lm's layout, as loralayout.go
// cites them: torchtune's convert_weights.py names
// (layers.N.attn.q_proj.lora_a.weight [r, in], lora_b.weight [out, r]) with
// the peft adapter_config.json tune_to_peft_adapter_config writes; mlx-lm's
// tuner/lora.py LoRALinear (<module>.lora_a [in, r], .lora_b [r, out]) with
// mlx_lm/lora.py's adapter_config.json (lora_parameters: rank, scale,
// dropout; num_layers). permute, for torchtune, stores q_proj's lora_B in
// Meta's rotary layout (heads of hd rows), as torchtune holds a Llama.
func (f *loraFixture) writeLayoutAdapter(t *testing.T, layout loraLayout, mlxScale float64, heads, hd int) string {
	t.Helper()
	dir := t.TempDir()
	var ts []fixture.Tensor
	enc := func(name string, v []float32, shape ...uint64) {
		ts = append(ts, fixture.Tensor{Name: name, DType: safetensors.BF16, Shape: shape, Data: fixture.Encode(v, safetensors.BF16)})
	}
	for _, m := range f.targets {
		switch layout {
		case layoutMLX:
			enc(m+".lora_a", transpose(f.a[m], loraR, loraH), loraH, loraR)
			enc(m+".lora_b", transpose(f.b[m], loraH, loraR), loraR, loraH)
		case layoutTorchtune:
			tune := "layers.0.attn." + m[strings.LastIndex(m, ".")+1:]
			b := f.b[m]
			if heads > 0 && strings.HasSuffix(m, "q_proj") {
				b = unpermuteRows(b, heads, hd, loraR)
			}
			enc(tune+".lora_a.weight", f.a[m], loraR, loraH)
			enc(tune+".lora_b.weight", b, loraH, loraR)
		}
	}
	name := "adapter_model.safetensors"
	cfg := map[string]any{"peft_type": "LORA", "base_model_name_or_path": "Qwen/Qwen3-0.6B", "r": loraR, "lora_alpha": loraAlpha,
		"target_modules": []string{"q_proj", "v_proj"}}
	if layout == layoutMLX {
		name = mlxAdapterFile
		cfg = map[string]any{"model": "Qwen/Qwen3-0.6B", "fine_tune_type": "lora", "num_layers": 1,
			"lora_parameters": map[string]any{"rank": loraR, "scale": mlxScale, "dropout": 0.0}}
	}
	if err := fixture.WriteFile(filepath.Join(dir, name), ts, nil); err != nil {
		t.Fatal(err)
	}
	if err := fixture.WriteJSON(filepath.Join(dir, "adapter_config.json"), cfg); err != nil {
		t.Fatal(err)
	}
	return dir
}

// unpermuteRows undoes permuteRotaryRows: Hugging Face's rows back to
// Meta's rotary layout.
func unpermuteRows(v []float32, heads, hd, r int) []float32 {
	out := make([]float32, len(v))
	for h := range heads {
		for c := range hd / 2 {
			for k := range 2 {
				from, to := h*hd+2*c+k, h*hd+k*hd/2+c
				copy(out[from*r:(from+1)*r], v[to*r:(to+1)*r])
			}
		}
	}
	return out
}

// TestCompareLoRALayouts: a torchtune or mlx-lm adapter's correct merge
// passes and a wrong scale fails, naming it. mlx-lm's fuse
// (LoRALinear.fuse: delta cast to the weight's dtype, then added) uses its
// scale as is; torchtune's get_merged_lora_ckpt uses alpha/r.
func TestCompareLoRALayouts(t *testing.T) {
	const q = "model.layers.0.self_attn.q_proj.weight"
	tests := []struct {
		name        string
		layout      loraLayout
		llama       bool    // the base's config.json says llama: torchtune's q_proj lora_B is permuted
		mlxScale    float64 // the config's
		mergedScale float32 // 0: f.scale
		wantScale   string  // in the finding of a wrong scale; "": the merge passes
	}{
		{name: "mlx-lm", layout: layoutMLX, mlxScale: loraAlpha / loraR},
		{name: "mlx-lm wrong scale", layout: layoutMLX, mlxScale: loraAlpha / loraR, mergedScale: 20, wantScale: "not 2 ("},
		{name: "mlx-lm scale is not alpha/r", layout: layoutMLX, mlxScale: loraAlpha, wantScale: "mlx-lm's lora_parameters.scale"},
		{name: "torchtune", layout: layoutTorchtune},
		{name: "torchtune llama", layout: layoutTorchtune, llama: true},
		{name: "torchtune alpha instead of alpha/r", layout: layoutTorchtune, mergedScale: loraAlpha, wantScale: "merged with scale 16"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newLoRAFixture(4, false)
			baseDir := f.write(t, t.TempDir(), f.base)
			heads, hd := 0, 0
			if tc.llama {
				heads, hd = 4, 16
				cfg := map[string]any{"model_type": "llama", "hidden_size": loraH, "num_attention_heads": heads, "num_key_value_heads": heads, "head_dim": hd}
				if err := fixture.WriteJSON(filepath.Join(baseDir, "config.json"), cfg); err != nil {
					t.Fatal(err)
				}
			}
			scale := f.scale
			if tc.mergedScale != 0 {
				scale = tc.mergedScale
			}
			m := f.merged(false, scale, nil)
			m["lm_head.weight"] = f.base["lm_head.weight"] // no modules_to_save in these layouts
			base, merged := openCk(t, baseDir), openCk(t, f.write(t, t.TempDir(), m))
			ad := openCk(t, f.writeLayoutAdapter(t, tc.layout, tc.mlxScale, heads, hd))
			rep := compareLoRA(t, base, merged, ad, LoRAOptions{})
			if len(rep.Targets) != 2 {
				t.Fatalf("targets %+v (findings %v)", rep.Targets, rep.Findings)
			}
			if tc.wantScale == "" {
				if len(rep.Findings) != 0 {
					t.Fatalf("findings %v", rep.Findings)
				}
				for _, tg := range rep.Targets {
					if tg.Verdict != "merged" {
						t.Errorf("%s: %s", tg.Key, tg.Verdict)
					}
				}
				return
			}
			got := codesByKey(rep.Findings)
			if c := got[q]; len(c) != 1 || c[0] != CodeLoRAMergeMismatch {
				t.Fatalf("findings %v", rep.Findings)
			}
			for _, fd := range rep.Findings {
				if !strings.Contains(fd.Message, tc.wantScale) {
					t.Errorf("%s: %q does not say %q", fd.Key, fd.Message, tc.wantScale)
				}
			}
		})
	}
}

// TestTorchtunePermutationMatters: without the llama config the permuted
// lora_B is a different delta, and the merge check says so.
func TestTorchtunePermutationMatters(t *testing.T) {
	f := newLoRAFixture(5, false)
	m := f.merged(false, f.scale, nil)
	m["lm_head.weight"] = f.base["lm_head.weight"]
	base, merged := openCk(t, f.write(t, t.TempDir(), f.base)), openCk(t, f.write(t, t.TempDir(), m))
	ad := openCk(t, f.writeLayoutAdapter(t, layoutTorchtune, 0, 4, 16))
	d, err := Diff(context.Background(), base, merged, DiffOptions{WeightsOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := d.CompareLoRA(context.Background(), ad, LoRAOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := codesByKey(rep.Findings)["model.layers.0.self_attn.q_proj.weight"]; len(c) != 1 || c[0] != CodeLoRAMergeMismatch {
		t.Fatalf("findings %v", rep.Findings)
	}
}

// TestInspectAdapterLayouts: inspect reads each layout's targets in peft's
// terms (in, out, rank) and its scale.
func TestInspectAdapterLayouts(t *testing.T) {
	f := newLoRAFixture(6, false)
	for _, tc := range []struct {
		layout loraLayout
		scale  float64
	}{{layoutMLX, 3.5}, {layoutTorchtune, loraAlpha / loraR}} {
		ins := Inspect(openCk(t, f.writeLayoutAdapter(t, tc.layout, tc.scale, 0, 0)), nil, false)
		a := ins.Adapter
		if a == nil {
			t.Fatalf("%s: no adapter section", tc.layout)
		}
		if a.Layout != tc.layout.String() || a.Rank != loraR || len(a.Targets) != 2 {
			t.Fatalf("%s: %+v", tc.layout, a)
		}
		for _, tg := range a.Targets {
			if tg.In != loraH || tg.Out != loraH || tg.Rank != loraR || float64(tg.Scale) != tc.scale || !strings.HasPrefix(tg.Module, "model.layers.0.self_attn.") {
				t.Errorf("%s: target %+v", tc.layout, tg)
			}
		}
		if want := uint64(2 * 2 * loraR * loraH); a.TrainableParameters != want {
			t.Errorf("%s: trainable %d, want %d", tc.layout, a.TrainableParameters, want)
		}
	}
}
