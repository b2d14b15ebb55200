package verify

import (
	"context"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/checkpoint"
	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// The fixtures follow huggingface/peft @ 003369494699fedd543fe38d16e52df96aeae743:
// src/peft/tuners/lora/layer.py, Linear.get_delta_weight (the delta
// B @ A · scaling computed in float32 and cast back to a BF16 adapter's
// dtype) and Linear.merge (base_layer.weight.data += delta_weight);
// LoraLayer.update_layer (scaling = lora_alpha / r, or / √r with
// use_rslora); src/peft/utils/save_and_load.py (the saved names).

const (
	loraH, loraV, loraR = 64, 32, 8
	loraAlpha           = 16.0
)

// bf16 rounds to BF16, to nearest even, as torch's cast does.
func bf16(v float32) float32 {
	b := math.Float32bits(v)
	b += 0x7fff + (b>>16)&1
	return math.Float32frombits(b &^ 0xffff)
}

func gauss(rng *rand.Rand, n int, std float64) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = bf16(float32(rng.NormFloat64() * std))
	}
	return out
}

// deltaF32 is scale · B @ A in float32, as get_delta_weight computes it.
func deltaF32(b, a []float32, out, in, r int, scale float32) []float32 {
	d := make([]float32, out*in)
	for o := range out {
		for j := range in {
			var s float32
			for i := range r {
				s += b[o*r+i] * a[i*in+j]
			}
			d[o*in+j] = s * scale
		}
	}
	return d
}

type loraFixture struct {
	base              map[string][]float32
	shapes            map[string][]uint64
	order             []string
	a, b              map[string][]float32 // by module path
	saved             []float32            // lm_head's modules_to_save copy
	mag               map[string][]float32 // DoRA's magnitudes by module path; nil: LoRA
	embA, embB        []float32            // embed_tokens' lora_embedding_A [r, V] and _B [H, r]; nil: none
	targets           []string
	rslora            bool
	scale             float32
	configExtraTarget string
}

func newLoRAFixture(seed uint64, rslora bool) *loraFixture {
	rng := rand.New(rand.NewPCG(seed, 7))
	f := &loraFixture{base: map[string][]float32{}, shapes: map[string][]uint64{}, a: map[string][]float32{}, b: map[string][]float32{},
		targets: []string{"model.layers.0.self_attn.q_proj", "model.layers.0.self_attn.v_proj"}, rslora: rslora}
	add := func(name string, std float64, shape ...uint64) {
		n := 1
		for _, d := range shape {
			n *= int(d)
		}
		f.base[name], f.shapes[name] = gauss(rng, n, std), shape
		f.order = append(f.order, name)
	}
	add("model.embed_tokens.weight", 0.02, loraV, loraH)
	add("model.layers.0.input_layernorm.weight", 0.1, loraH)
	add("model.layers.0.self_attn.q_proj.weight", 0.02, loraH, loraH)
	add("model.layers.0.self_attn.v_proj.weight", 0.02, loraH, loraH)
	add("lm_head.weight", 0.02, loraV, loraH)
	for _, t := range f.targets {
		f.a[t] = gauss(rng, loraR*loraH, 1/math.Sqrt(loraH))
		f.b[t] = gauss(rng, loraH*loraR, 0.01)
	}
	f.saved = gauss(rng, loraV*loraH, 0.02)
	f.scale = loraAlpha / loraR
	if rslora {
		f.scale = float32(loraAlpha / math.Sqrt(loraR))
	}
	return f
}

// merged builds the merged tensors: upcast says the adapter was upcast
// to float32 (one rounding), else the delta is cast to BF16 first.
func (f *loraFixture) merged(upcast bool, scale float32, onto map[string]string) map[string][]float32 {
	out := map[string][]float32{}
	for n, v := range f.base {
		out[n] = append([]float32(nil), v...)
	}
	out["lm_head.weight"] = f.saved
	for _, t := range f.targets {
		dst := t
		if o, ok := onto[t]; ok {
			dst = o
		}
		if dst == "" {
			continue
		}
		d := deltaF32(f.b[t], f.a[t], loraH, loraH, loraR, scale)
		w := out[dst+".weight"]
		for i := range w {
			delta := d[i]
			if !upcast {
				delta = bf16(delta)
			}
			w[i] = bf16(w[i] + delta)
		}
	}
	return out
}

func (f *loraFixture) write(t *testing.T, dir string, vals map[string][]float32) string {
	t.Helper()
	var ts []fixture.Tensor
	for _, n := range f.order {
		ts = append(ts, fixture.Tensor{Name: n, DType: safetensors.BF16, Shape: f.shapes[n], Data: fixture.Encode(vals[n], safetensors.BF16)})
	}
	if err := fixture.WriteFile(filepath.Join(dir, "model.safetensors"), ts, nil); err != nil {
		t.Fatal(err)
	}
	return dir
}

func (f *loraFixture) writeAdapter(t *testing.T, dir string, extraTarget string) string {
	t.Helper()
	var ts []fixture.Tensor
	targets := []string{"q_proj", "v_proj"}
	for _, m := range f.targets {
		ts = append(ts,
			fixture.Tensor{Name: peftPrefix + m + ".lora_A.weight", DType: safetensors.BF16, Shape: []uint64{loraR, loraH}, Data: fixture.Encode(f.a[m], safetensors.BF16)},
			fixture.Tensor{Name: peftPrefix + m + ".lora_B.weight", DType: safetensors.BF16, Shape: []uint64{loraH, loraR}, Data: fixture.Encode(f.b[m], safetensors.BF16)})
	}
	if extraTarget != "" {
		ts = append(ts,
			fixture.Tensor{Name: peftPrefix + extraTarget + ".lora_A.weight", DType: safetensors.BF16, Shape: []uint64{loraR, loraH}, Data: fixture.Encode(f.a[f.targets[0]], safetensors.BF16)},
			fixture.Tensor{Name: peftPrefix + extraTarget + ".lora_B.weight", DType: safetensors.BF16, Shape: []uint64{loraH, loraR}, Data: fixture.Encode(f.b[f.targets[0]], safetensors.BF16)})
	}
	for _, m := range f.targets {
		if mag, ok := f.mag[m]; ok {
			ts = append(ts, fixture.Tensor{Name: peftPrefix + m + ".lora_magnitude_vector", DType: safetensors.BF16, Shape: []uint64{uint64(len(mag))}, Data: fixture.Encode(mag, safetensors.BF16)})
		}
	}
	if f.embA != nil {
		ts = append(ts,
			fixture.Tensor{Name: peftPrefix + "model.embed_tokens.lora_embedding_A", DType: safetensors.BF16, Shape: []uint64{loraR, loraV}, Data: fixture.Encode(f.embA, safetensors.BF16)},
			fixture.Tensor{Name: peftPrefix + "model.embed_tokens.lora_embedding_B", DType: safetensors.BF16, Shape: []uint64{loraH, loraR}, Data: fixture.Encode(f.embB, safetensors.BF16)})
	}
	ts = append(ts, fixture.Tensor{Name: peftPrefix + "lm_head.weight", DType: safetensors.BF16, Shape: []uint64{loraV, loraH}, Data: fixture.Encode(f.saved, safetensors.BF16)})
	if err := fixture.WriteFile(filepath.Join(dir, "adapter_model.safetensors"), ts, nil); err != nil {
		t.Fatal(err)
	}
	if f.configExtraTarget != "" {
		targets = append(targets, f.configExtraTarget)
	}
	cfg := map[string]any{"peft_type": "LORA", "base_model_name_or_path": "Qwen/Qwen3-0.6B", "r": loraR, "lora_alpha": loraAlpha,
		"use_rslora": f.rslora, "use_dora": f.mag != nil, "target_modules": targets, "modules_to_save": []string{"lm_head"}}
	if err := fixture.WriteJSON(filepath.Join(dir, "adapter_config.json"), cfg); err != nil {
		t.Fatal(err)
	}
	return dir
}

func openCk(t testing.TB, dir string) *checkpoint.Checkpoint {
	t.Helper()
	c, err := checkpoint.Open(context.Background(), dir, checkpoint.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// compareLoRA is diff --lora of the checkpoints with opt.
func compareLoRA(t *testing.T, base, merged, ad *checkpoint.Checkpoint, opt LoRAOptions) *LoRAReport {
	t.Helper()
	d, err := Diff(context.Background(), base, merged, DiffOptions{WeightsOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := d.CompareLoRA(context.Background(), ad, opt)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func codesByKey(fs []Finding) map[string][]Code {
	out := map[string][]Code{}
	for _, f := range fs {
		out[f.Key] = append(out[f.Key], f.Code)
	}
	return out
}

func TestCompareLoRA(t *testing.T) {
	const q, v = "model.layers.0.self_attn.q_proj.weight", "model.layers.0.self_attn.v_proj.weight"
	type mutate func(f *loraFixture) map[string][]float32
	tests := []struct {
		name   string
		rslora bool
		merged mutate
		want   map[string][]Code // findings by key; nil: none
		scale  string            // in the message, for a wrong scale
	}{
		{name: "bf16 delta then add", merged: func(f *loraFixture) map[string][]float32 { return f.merged(false, f.scale, nil) }},
		{name: "upcast adapter", merged: func(f *loraFixture) map[string][]float32 { return f.merged(true, f.scale, nil) }},
		{name: "rslora", rslora: true, merged: func(f *loraFixture) map[string][]float32 { return f.merged(true, f.scale, nil) }},
		{name: "merge is the base", merged: func(f *loraFixture) map[string][]float32 {
			m := f.merged(true, f.scale, map[string]string{f.targets[0]: "", f.targets[1]: ""})
			return m
		}, want: map[string][]Code{q: {CodeLoRANotMerged}, v: {CodeLoRANotMerged}}},
		{name: "alpha instead of alpha/r", merged: func(f *loraFixture) map[string][]float32 { return f.merged(true, loraAlpha, nil) },
			want: map[string][]Code{q: {CodeLoRAMergeMismatch}, v: {CodeLoRAMergeMismatch}}, scale: "merged with scale 16"},
		{name: "delta on the wrong module", merged: func(f *loraFixture) map[string][]float32 {
			return f.merged(true, f.scale, map[string]string{f.targets[0]: f.targets[1], f.targets[1]: ""})
		}, want: map[string][]Code{q: {CodeLoRANotMerged}, v: {CodeLoRAMergeMismatch}}},
		{name: "lost modules_to_save", merged: func(f *loraFixture) map[string][]float32 {
			m := f.merged(true, f.scale, nil)
			m["lm_head.weight"] = f.base["lm_head.weight"]
			return m
		}, want: map[string][]Code{"lm_head.weight": {CodeLoRAMergeMismatch}}},
		{name: "a non-target changed", merged: func(f *loraFixture) map[string][]float32 {
			m := f.merged(true, f.scale, nil)
			m["model.layers.0.input_layernorm.weight"] = append([]float32(nil), m["model.layers.0.input_layernorm.weight"]...)
			m["model.layers.0.input_layernorm.weight"][3] *= 2
			return m
		}, want: map[string][]Code{"model.layers.0.input_layernorm.weight": {CodeLoRAMergeExtra}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newLoRAFixture(1, tc.rslora)
			base := openCk(t, f.write(t, t.TempDir(), f.base))
			merged := openCk(t, f.write(t, t.TempDir(), tc.merged(f)))
			ad := openCk(t, f.writeAdapter(t, t.TempDir(), ""))
			d, err := Diff(context.Background(), base, merged, DiffOptions{WeightsOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range []int{1, 3, 8} {
				rep, err := d.CompareLoRA(context.Background(), ad, LoRAOptions{Probes: k})
				if err != nil {
					t.Fatal(err)
				}
				got := codesByKey(rep.Findings)
				if len(got) != len(tc.want) {
					t.Fatalf("k=%d: findings %v, want %v", k, rep.Findings, tc.want)
				}
				for key, codes := range tc.want {
					if len(got[key]) != len(codes) || got[key][0] != codes[0] {
						t.Errorf("k=%d: %s: %v, want %v (%v)", k, key, got[key], codes, rep.Findings)
					}
				}
				if tc.scale != "" {
					for _, fd := range rep.Findings {
						if !strings.Contains(fd.Message, tc.scale) {
							t.Errorf("k=%d: %s: %q does not say %q", k, fd.Key, fd.Message, tc.scale)
						}
					}
				}
				if tc.want == nil {
					for _, tg := range rep.Targets {
						if tg.Verdict != "merged" {
							t.Errorf("k=%d: %s: %s", k, tg.Key, tg.Verdict)
						}
					}
				}
			}
		})
	}
}

// The two peft paths are different merges: both must pass above.
func TestLoRAPathsDiffer(t *testing.T) {
	f := newLoRAFixture(1, false)
	a, b := f.merged(false, f.scale, nil), f.merged(true, f.scale, nil)
	n := 0
	for i, v := range a[f.targets[0]+".weight"] {
		if v != b[f.targets[0]+".weight"][i] {
			n++
		}
	}
	if n == 0 {
		t.Fatal("the BF16-delta and upcast merges are equal: the fixture tests one path only")
	}
}

func TestCheckAdapter(t *testing.T) {
	f := newLoRAFixture(2, false)
	base := openCk(t, f.write(t, t.TempDir(), f.base))
	f.configExtraTarget = "o_proj"
	ad := openCk(t, f.writeAdapter(t, t.TempDir(), "model.layers.0.self_attn.k_proj"))
	fs, err := CheckAdapter(base, ad)
	if err != nil {
		t.Fatal(err)
	}
	got := codesByKey(fs)
	if c := got["model.layers.0.self_attn.k_proj.weight"]; len(c) != 1 || c[0] != CodeLoRATargetMissing {
		t.Errorf("k_proj: %v", fs)
	}
	if c := got[""]; len(c) != 1 || c[0] != CodeLoRATargetEmpty {
		t.Errorf("o_proj: %v", fs)
	}
	if len(fs) != 2 {
		t.Errorf("findings %v", fs)
	}
}

// TestCompareLoRANonFiniteAdapter: a target whose adapter values are not
// finite is reported and not judged (its tensor is held to the base), the
// other targets are.
func TestCompareLoRANonFiniteAdapter(t *testing.T) {
	const q = "model.layers.0.self_attn.q_proj.weight"
	f := newLoRAFixture(7, false)
	base, merged := openCk(t, f.write(t, t.TempDir(), f.base)), openCk(t, f.write(t, t.TempDir(), f.merged(true, f.scale, nil)))
	f.a[f.targets[0]][5] = float32(math.NaN())
	ad := openCk(t, f.writeAdapter(t, t.TempDir(), ""))
	rep := compareLoRA(t, base, merged, ad, LoRAOptions{})
	if got := codesByKey(rep.Findings)[q]; len(got) != 2 || got[0] != CodeNonFinite || got[1] != CodeLoRAMergeExtra || len(codesByKey(rep.Findings)) != 1 {
		t.Fatalf("findings %v", rep.Findings)
	}
	if len(rep.Targets) != 1 || rep.Targets[0].Verdict != "merged" {
		t.Fatalf("targets %+v", rep.Targets)
	}
}
