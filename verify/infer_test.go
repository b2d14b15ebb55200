package verify

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/adapter"
	"github.com/ckptcheck/ckptcheck/internal/fixture"
)

// inferCase is an upstream layout that has a preset, treated as unseen:
// --adapter exported=infer must map every tensor the preset maps, with
// values passing, and the written adapter must give the same report.
type inferCase struct {
	name   string
	model  func() *hfModel
	export func(m *hfModel) []fixture.Tensor
	preset string
	// broken is a negative control: its values must fail, or inference
	// must leave the tensors unmapped.
	broken func(m *hfModel) []fixture.Tensor
	// conflict says the control is broken the same way in every layer, a
	// layout consistent to values that names contradict: the diff must
	// say so (inference_conflict), not only fail on values.
	conflict bool
}

// matchedKeys lists the published keys the export has under the views.
func matchedKeys(d *Comparison) []string {
	var out []string
	for _, t := range d.Published.View.Tensors {
		if _, ok := d.Exported.View.Tensor(t.Name); ok {
			out = append(out, t.Name)
		}
	}
	slices.Sort(out)
	return out
}

// inferCases are the preset-covered layouts inference must map as the
// presets do, on either side.
func inferCases() []inferCase {
	return []inferCase{
		{"torchtitan qwen3 moe v0.2 names", func() *hfModel { return hfLlama("qwen3_moe", 12) },
			func(m *hfModel) []fixture.Tensor { return ttQwen3(m, ttOpts{g: ttG1, experts: 12}) }, "torchtitan-qwen3",
			func(m *hfModel) []fixture.Tensor {
				return ttQwen3(m, ttOpts{g: ttG1, experts: 12, order: lexicographic(12)})
			}, false},
		{"torchtitan qwen3 fused wqkv", func() *hfModel { return hfLlama("qwen3", 0) },
			func(m *hfModel) []fixture.Tensor { return ttQwen3(m, ttOpts{g: ttG2, fuse: true}) }, "torchtitan-qwen3",
			func(m *hfModel) []fixture.Tensor { return ttQwen3(m, ttOpts{g: ttG2, fuse: true, swapKV: true}) }, true},
		{"torchtitan llama3 fused wqkv, permuted", func() *hfModel { return hfLlama("llama", 0) },
			func(m *hfModel) []fixture.Tensor { return ttQwen3(m, ttOpts{g: ttG2, fuse: true, permute: true}) }, "torchtitan-llama3", nil, false},
		{"torchtitan backend moe, gate/up swapped in the control", func() *hfModel { return hfLlama("qwen3_moe", 3) },
			func(m *hfModel) []fixture.Tensor { return ttBackendMoE(m, 3, true, false) }, "torchtitan-hf",
			func(m *hfModel) []fixture.Tensor { return ttBackendMoE(m, 3, true, true) }, true},
		{"torchtitan qwen3 dense, k and v swapped in every layer", func() *hfModel { return hfLlama("qwen3", 0) },
			func(m *hfModel) []fixture.Tensor { return ttQwen3(m, ttOpts{g: ttG2}) }, "torchtitan-qwen3",
			func(m *hfModel) []fixture.Tensor {
				return swapNames(ttQwen3(m, ttOpts{g: ttG2}), ".wk.", ".wv.")
			}, true},
		{"torchtitan qwen3 dense, w1 and w3 swapped in every layer", func() *hfModel { return hfLlama("qwen3", 0) },
			func(m *hfModel) []fixture.Tensor { return ttQwen3(m, ttOpts{g: ttG2}) }, "torchtitan-qwen3",
			func(m *hfModel) []fixture.Tensor {
				return swapNames(ttQwen3(m, ttOpts{g: ttG2}), "feed_forward.w1.", "feed_forward.w3.")
			}, true},
		{"torchtitan qwen3 dense, a wrong layer's tensor", func() *hfModel { return hfLlama("qwen3", 0) },
			func(m *hfModel) []fixture.Tensor { return ttQwen3(m, ttOpts{g: ttG2}) }, "torchtitan-qwen3",
			func(m *hfModel) []fixture.Tensor {
				return swapNames(ttQwen3(m, ttOpts{g: ttG2}), "layers.0.feed_forward.w2.", "layers.1.feed_forward.w2.")
			}, false},
		{"megatron TE spec qwen2", func() *hfModel { return hfLlama("qwen2", 0) },
			func(m *hfModel) []fixture.Tensor { return megatronOf(m, 0, mgOpts{}) }, "megatron",
			func(m *hfModel) []fixture.Tensor { return megatronOf(m, 0, mgOpts{plainBias: true}) }, true},
		{"hf v5 fused experts", func() *hfModel { return hfLlama("qwen3_moe", v5Experts) },
			func(m *hfModel) []fixture.Tensor {
				return m.done(append(v5Fuse(m, "mlp", "mlp", [3]string{"gate_proj", "up_proj", "down_proj"}, false), m.rest()...))
			}, "hf-v5-fused",
			func(m *hfModel) []fixture.Tensor {
				return m.done(append(v5Fuse(m, "mlp", "mlp", [3]string{"gate_proj", "up_proj", "down_proj"}, true), m.rest()...))
			}, true},
		{"nanogpt transposed", func() *hfModel { return gpt2Model("transformer.", false) },
			func(m *hfModel) []fixture.Tensor { return nanoGPT(m, false) }, "nanogpt",
			func(m *hfModel) []fixture.Tensor { return nanoGPT(m, true) }, true},
	}
}

func TestInferConventions(t *testing.T) {
	for _, c := range inferCases() {
		t.Run(c.name, func(t *testing.T) {
			m := c.model()
			pub := writeHFModel(t, m)
			exp := export(t, c.export(m.clone()), nil)
			preset := diffPaths(t, pub, exp, DiffOptions{WeightsOnly: true, Exported: SideOptions{Chain: mustChain(t, c.preset), Fixed: true}})
			d := diffPaths(t, pub, exp, DiffOptions{WeightsOnly: true, Exported: SideOptions{Infer: true}})
			if d.Inference == nil {
				t.Fatal("no inference")
			}
			text := d.Inference.Text()
			want, got := matchedKeys(preset), matchedKeys(d)
			if !slices.Equal(want, got) {
				t.Fatalf("inferred adapter matches %d keys, the preset %d; missing %v\n%s\n%+v", len(got), len(want), missingFrom(want, got), text, d.Inference.Report())
			}
			rep, err := d.CompareValues(context.Background(), ValueOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Findings) != 0 || rep.BitIdentical != rep.Compared || rep.Compared < len(want) {
				t.Errorf("values: %d compared, %d identical; %v\n%s", rep.Compared, rep.BitIdentical, rep.Findings, text)
			}
			// The written adapter, loaded back, gives the same report.
			a, err := adapter.Parse("written.adapter", text)
			if err != nil {
				t.Fatal(err)
			}
			back := diffPaths(t, pub, exp, DiffOptions{WeightsOnly: true, Exported: SideOptions{Chain: adapter.Chain{a}, Fixed: true}})
			if !slices.Equal(matchedKeys(back), got) || len(back.Findings) != len(d.Findings) {
				t.Errorf("written adapter: %d keys, %d findings; inferred %d keys, %d findings", len(matchedKeys(back)), len(back.Findings), len(got), len(d.Findings))
			}
			if c.broken == nil {
				return
			}
			bexp := export(t, c.broken(m.clone()), nil)
			bd := diffPaths(t, pub, bexp, DiffOptions{WeightsOnly: true, Exported: SideOptions{Infer: true}})
			brep, err := bd.CompareValues(context.Background(), ValueOptions{})
			if err != nil {
				t.Fatal(err)
			}
			failed := len(brep.Findings) > 0 || slices.ContainsFunc(bd.Findings, func(f Finding) bool { return f.Severity == Error })
			if !failed {
				t.Errorf("negative control passed: inference explained it away\n%s", bd.Inference.Text())
			}
			if c.conflict && !slices.ContainsFunc(bd.Findings, func(f Finding) bool { return f.Code == CodeInferConflict }) {
				t.Errorf("no inference_conflict: %v\n%s", codesOf(bd.Findings), bd.Inference.Text())
			}
		})
	}
}

// swapNames swaps two name parts in every tensor name: an export that
// wrote one tensor under the other's name in every layer.
func swapNames(ts []fixture.Tensor, a, b string) []fixture.Tensor {
	r := strings.NewReplacer(a, b, b, a)
	for i := range ts {
		ts[i].Name = r.Replace(ts[i].Name)
	}
	return ts
}

func missingFrom(want, got []string) []string {
	var out []string
	for _, w := range want {
		if !slices.Contains(got, w) {
			out = append(out, w)
		}
	}
	return out
}

// jaxStyle is a llama exported the way a JAX/Flax trainer stores it (no
// preset knows it): every kernel [in, out], the transpose of torch's
// Linear; q, k and v fused into one kernel, GPT-2's c_attn way
// (cat([q, k, v]).T, with GQA sizes); Flax's names (params, kernel, scale,
// embedding). swapQK is the broken control: k's rows before q's.
func jaxStyle(m *hfModel, swapQK bool) []fixture.Tensor {
	var out []fixture.Tensor
	kernel := func(hf, name string) {
		out = append(out, m.take(hf).transpose(0, 1).tensor(name))
	}
	for i := range cvLayers {
		hf, jx := fmt.Sprintf("model.layers.%d.", i), fmt.Sprintf("params.blocks.%d.", i)
		q, k, v := m.take(hf+"self_attn.q_proj.weight"), m.take(hf+"self_attn.k_proj.weight"), m.take(hf+"self_attn.v_proj.weight")
		if swapQK {
			q, k = k, q
		}
		out = append(out, cat(0, q, k, v).transpose(0, 1).tensor(jx+"attn.qkv.kernel"))
		kernel(hf+"self_attn.o_proj.weight", jx+"attn.out.kernel")
		kernel(hf+"mlp.gate_proj.weight", jx+"mlp.wi_0.kernel")
		kernel(hf+"mlp.up_proj.weight", jx+"mlp.wi_1.kernel")
		kernel(hf+"mlp.down_proj.weight", jx+"mlp.wo.kernel")
		out = append(out, m.take(hf+"input_layernorm.weight").tensor(jx+"pre_attention_norm.scale"),
			m.take(hf+"post_attention_layernorm.weight").tensor(jx+"pre_ffw_norm.scale"))
	}
	out = append(out, m.take("model.embed_tokens.weight").tensor("params.embedder.embedding"),
		m.take("model.norm.weight").tensor("params.final_norm.scale"))
	kernel("lm_head.weight", "params.lm_head.kernel")
	return m.done(out)
}

// unfusedGPT2 is GPT-2 exported by a trainer that keeps q, k and v apart
// as torch Linears: c_attn [D, 3D] (Conv1D, the transpose) becomes
// q_proj, k_proj, v_proj [D, D] = c_attn.T.chunk(3), its bias likewise;
// the rest as transformers has it. swapKV is the control: k and v
// written under each other's names.
func unfusedGPT2(m *hfModel, swapKV bool) []fixture.Tensor {
	var out []fixture.Tensor
	names := []string{"q_proj", "k_proj", "v_proj"}
	if swapKV {
		names[1], names[2] = names[2], names[1]
	}
	for i := range cvLayers {
		p := fmt.Sprintf("transformer.h.%d.attn.", i)
		w := m.take(p+"c_attn.weight").transpose(0, 1).chunk(3, 0)
		b := m.take(p+"c_attn.bias").chunk(3, 0)
		for j, n := range names {
			out = append(out, w[j].tensor(p+n+".weight"), b[j].tensor(p+n+".bias"))
		}
	}
	return m.done(append(out, m.rest()...))
}

// phi3Model is a llama published the way transformers' Phi-3 stores it:
// q, k and v fused as qkv_proj (GQA sizes), gate and up as gate_up_proj.
func phi3Model() *hfModel {
	l := hfLlama("llama", 0)
	m := &hfModel{t: map[string]nd{}, config: l.config, next: l.next}
	put := func(name string, t nd) { m.order, m.t[name] = append(m.order, name), t }
	for _, n := range slices.Clone(l.order) {
		base, ok := strings.CutSuffix(n, "self_attn.q_proj.weight")
		switch {
		case ok:
			put(base+"self_attn.qkv_proj.weight", cat(0, l.take(n), l.take(base+"self_attn.k_proj.weight"), l.take(base+"self_attn.v_proj.weight")))
		case strings.HasSuffix(n, "mlp.gate_proj.weight"):
			base, _ := strings.CutSuffix(n, "gate_proj.weight")
			put(base+"gate_up_proj.weight", cat(0, l.take(n), l.take(base+"up_proj.weight")))
		default:
			if t, ok := l.t[n]; ok {
				put(n, t)
				delete(l.t, n)
			}
		}
	}
	return m
}

// phi3Unfused exports a phi3Model with q, k, v and gate, up apart, under a
// trainer's names; swapGateUp is the control.
func phi3Unfused(m *hfModel, swapGateUp bool) []fixture.Tensor {
	var out []fixture.Tensor
	for i := range cvLayers {
		p := fmt.Sprintf("model.layers.%d.", i)
		qkv := m.take(p+"self_attn.qkv_proj.weight").split([]int{cvHeads * cvHeadDim, cvKV * cvHeadDim, cvKV * cvHeadDim}, 0)
		gu := m.take(p+"mlp.gate_up_proj.weight").chunk(2, 0)
		if swapGateUp {
			gu[0], gu[1] = gu[1], gu[0]
		}
		out = append(out, qkv[0].tensor(p+"self_attn.q_proj.weight"), qkv[1].tensor(p+"self_attn.k_proj.weight"),
			qkv[2].tensor(p+"self_attn.v_proj.weight"), gu[0].tensor(p+"mlp.gate_proj.weight"), gu[1].tensor(p+"mlp.up_proj.weight"))
	}
	return m.done(trainerNames(append(out, m.rest()...)))
}

// jaxScan is a llama exported by a Flax model whose blocks run under
// nn.scan (variable_axes={"params": 0}): every per-layer parameter is one
// array stacked along dim 0, its kernels [in, out].
func jaxScan(m *hfModel) []fixture.Tensor {
	var out []fixture.Tensor
	stack := func(hf, name string, transpose bool) {
		var layers []nd
		for i := range cvLayers {
			t := m.take(fmt.Sprintf("model.layers.%d.%s", i, hf))
			if transpose {
				t = t.transpose(0, 1)
			}
			layers = append(layers, t.view(append([]int{1}, t.shape...)...))
		}
		out = append(out, cat(0, layers...).tensor(name))
	}
	for _, k := range [][2]string{{"self_attn.q_proj", "attn.query"}, {"self_attn.k_proj", "attn.key"}, {"self_attn.v_proj", "attn.value"},
		{"self_attn.o_proj", "attn.out"}, {"mlp.gate_proj", "mlp.wi_0"}, {"mlp.up_proj", "mlp.wi_1"}, {"mlp.down_proj", "mlp.wo"}} {
		stack(k[0]+".weight", "params.decoder.layers."+k[1]+".kernel", true)
	}
	stack("input_layernorm.weight", "params.decoder.layers.pre_attention_norm.scale", false)
	stack("post_attention_layernorm.weight", "params.decoder.layers.pre_ffw_norm.scale", false)
	out = append(out, m.take("model.embed_tokens.weight").tensor("params.embedder.embedding"),
		m.take("model.norm.weight").tensor("params.final_norm.scale"),
		m.take("lm_head.weight").transpose(0, 1).tensor("params.lm_head.kernel"))
	return m.done(out)
}

// A noPresetCase is a layout no preset covers, with its negative control.
type noPresetCase struct {
	name           string
	model          func() *hfModel
	export, broken func(m *hfModel) []fixture.Tensor
}

func noPresetCases() []noPresetCase {
	return []noPresetCase{
		{"jax-style kernels, fused transposed qkv with GQA sizes", func() *hfModel { return hfLlama("llama", 0) },
			func(m *hfModel) []fixture.Tensor { return jaxStyle(m, false) },
			func(m *hfModel) []fixture.Tensor { return jaxStyle(m, true) }},
		{"jax scan: layers stacked along dim 0, kernels [in, out]", func() *hfModel { return hfLlama("llama", 0) },
			jaxScan,
			func(m *hfModel) []fixture.Tensor {
				return swapNames(jaxScan(m), "attn.key.", "attn.value.")
			}},
		{"gpt-2 with c_attn unfused into q, k, v Linears", func() *hfModel { return gpt2Model("transformer.", false) },
			func(m *hfModel) []fixture.Tensor { return unfusedGPT2(m, false) },
			func(m *hfModel) []fixture.Tensor { return unfusedGPT2(m, true) }},
		{"phi-3 fused qkv_proj and gate_up_proj, exported apart", phi3Model,
			func(m *hfModel) []fixture.Tensor { return phi3Unfused(m, false) },
			func(m *hfModel) []fixture.Tensor { return phi3Unfused(m, true) }},
	}
}

// TestInferNoPreset: layouts no preset covers map through inference, every
// published key with values passing, and the written adapter loads back;
// their negative controls fail.
func TestInferNoPreset(t *testing.T) {
	for _, c := range noPresetCases() {
		t.Run(c.name, func(t *testing.T) {
			m := c.model()
			pub := writeHFModel(t, m)
			exp := export(t, c.export(m.clone()), nil)
			d := diffPaths(t, pub, exp, DiffOptions{WeightsOnly: true, Exported: SideOptions{Infer: true}})
			text := d.Inference.Text()
			if got := len(matchedKeys(d)); got != len(d.Published.View.Tensors) {
				t.Fatalf("%d of %d keys mapped\n%s\n%+v", got, len(d.Published.View.Tensors), text, d.Inference.Report())
			}
			rep, err := d.CompareValues(context.Background(), ValueOptions{})
			if err != nil {
				t.Fatal(err)
			}
			errs := func(fs []Finding) bool {
				return slices.ContainsFunc(fs, func(f Finding) bool { return f.Severity == Error })
			}
			if len(rep.Findings) != 0 || errs(d.Findings) || rep.BitIdentical != rep.Compared {
				t.Errorf("findings %v, values %v (%d of %d identical)\n%s", codesOf(d.Findings), rep.Findings, rep.BitIdentical, rep.Compared, text)
			}
			a, err := adapter.Parse("written.adapter", text)
			if err != nil {
				t.Fatal(err)
			}
			back := diffPaths(t, pub, exp, DiffOptions{WeightsOnly: true, Exported: SideOptions{Chain: adapter.Chain{a}, Fixed: true}})
			if !slices.Equal(matchedKeys(back), matchedKeys(d)) || len(back.Findings) != len(d.Findings) {
				t.Errorf("written adapter: %d keys, findings %v", len(matchedKeys(back)), codesOf(back.Findings))
			}
			bd := diffPaths(t, pub, export(t, c.broken(m.clone()), nil), DiffOptions{WeightsOnly: true, Exported: SideOptions{Infer: true}})
			if !slices.ContainsFunc(bd.Findings, func(f Finding) bool { return f.Code == CodeInferConflict }) {
				t.Errorf("negative control: no inference_conflict: %v\n%s", codesOf(bd.Findings), bd.Inference.Text())
			}
		})
	}
}
