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

// These tests build framework exports from a published HF fixture with
// their own stacking, splitting and permuting code, independent of the
// adapters, then check that diff maps them back.

type tensorSet map[string]fixture.Tensor

func setOf(ts []fixture.Tensor) tensorSet {
	m := tensorSet{}
	for _, t := range ts {
		m[t.Name] = t
	}
	return m
}

func (m tensorSet) list() []fixture.Tensor {
	var out []fixture.Tensor
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}) {
		out = append(out, m[k])
	}
	return out
}

// take removes the HF tensor name from m and returns it under a new name.
func (m tensorSet) take(name, as string) fixture.Tensor {
	t, ok := m[name]
	if !ok {
		panic("fixture has no " + name)
	}
	delete(m, name)
	t.Name = as
	return t
}

// stack joins equal-shaped tensors along a new dim 0.
func stack(name string, ts ...fixture.Tensor) fixture.Tensor {
	out := fixture.Tensor{Name: name, DType: ts[0].DType, Shape: append([]uint64{uint64(len(ts))}, ts[0].Shape...)}
	for _, t := range ts {
		out.Data = append(out.Data, t.Data...)
	}
	return out
}

// rows joins tensors along dim 0.
func rows(name string, ts ...fixture.Tensor) fixture.Tensor {
	out := fixture.Tensor{Name: name, DType: ts[0].DType, Shape: slices.Clone(ts[0].Shape)}
	out.Shape[0] = 0
	for _, t := range ts {
		out.Data = append(out.Data, t.Data...)
		out.Shape[0] += t.Shape[0]
	}
	return out
}

// rowBlock returns rows [from, from+n) of a 2-D tensor.
func rowBlock(t fixture.Tensor, from, n uint64) fixture.Tensor {
	rb := uint64(len(t.Data)) / t.Shape[0]
	return fixture.Tensor{Name: t.Name, DType: t.DType, Shape: []uint64{n, t.Shape[1]}, Data: t.Data[from*rb : (from+n)*rb]}
}

// toNativeRotary undoes HF's rotary row order: native row (h, a, b) holds
// HF row (h, b, a) for the [heads, rows/heads/2, 2] view of the rows.
func toNativeRotary(t fixture.Tensor, heads uint64) fixture.Tensor {
	n := t.Shape[0]
	half := n / heads / 2
	var parts []fixture.Tensor
	for h := range heads {
		for a := range half {
			for b := range uint64(2) {
				parts = append(parts, rowBlock(t, h*2*half+b*half+a, 1))
			}
		}
	}
	return rows(t.Name, parts...)
}

func writeExport(t *testing.T, ts []fixture.Tensor) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "exported")
	if err := fixture.WriteFile(filepath.Join(dir, "model.safetensors"), ts, nil); err != nil {
		t.Fatal(err)
	}
	return dir
}

func writePublished(t *testing.T, q fixture.Qwen3, edit func(map[string]any)) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "published")
	cfg := q.Config("bfloat16")
	if edit != nil {
		edit(cfg)
	}
	if err := fixture.WriteSharded(dir, q.Tensors(safetensors.BF16), 2, cfg); err != nil {
		t.Fatal(err)
	}
	return dir
}

// torchtitanNative converts HF tensors to torchtitan's native names; newer
// uses the newer names (qkv_linear, routed_experts, *_EFD).
func torchtitanNative(q fixture.Qwen3, newer, permute bool) []fixture.Tensor {
	m := setOf(q.Tensors(safetensors.BF16))
	var out []fixture.Tensor
	out = append(out, m.take("model.embed_tokens.weight", "tok_embeddings.weight"), m.take("model.norm.weight", "norm.weight"))
	attn := "attention."
	if newer {
		attn = "attention.qkv_linear."
	}
	for i := range q.Layers {
		hf := fmt.Sprintf("model.layers.%d.", i)
		tt := fmt.Sprintf("layers.%d.", i)
		wq, wk := m.take(hf+"self_attn.q_proj.weight", tt+attn+"wq.weight"), m.take(hf+"self_attn.k_proj.weight", tt+attn+"wk.weight")
		if permute {
			wq, wk = toNativeRotary(wq, uint64(q.Heads)), toNativeRotary(wk, uint64(q.KVHeads))
		}
		out = append(out, wq, wk,
			m.take(hf+"self_attn.v_proj.weight", tt+attn+"wv.weight"),
			m.take(hf+"self_attn.o_proj.weight", tt+"attention.wo.weight"),
			m.take(hf+"input_layernorm.weight", tt+"attention_norm.weight"),
			m.take(hf+"post_attention_layernorm.weight", tt+"ffn_norm.weight"))
		if !q.Llama {
			out = append(out, m.take(hf+"self_attn.q_norm.weight", tt+"attention.q_norm.weight"),
				m.take(hf+"self_attn.k_norm.weight", tt+"attention.k_norm.weight"))
		}
		if q.Experts == 0 {
			out = append(out, m.take(hf+"mlp.gate_proj.weight", tt+"feed_forward.w1.weight"),
				m.take(hf+"mlp.up_proj.weight", tt+"feed_forward.w3.weight"),
				m.take(hf+"mlp.down_proj.weight", tt+"feed_forward.w2.weight"))
			continue
		}
		out = append(out, m.take(hf+"mlp.gate.weight", tt+"moe.router.gate.weight"))
		experts := func(proj string) []fixture.Tensor {
			var es []fixture.Tensor
			for e := range q.Experts {
				es = append(es, m.take(fmt.Sprintf("%smlp.experts.%d.%s.weight", hf, e, proj), ""))
			}
			return es
		}
		names := [4]string{"moe.experts.w1", "moe.experts.w3", "moe.experts.w2", "moe.expert_bias"}
		if newer {
			names = [4]string{"moe.routed_experts.inner_experts.w1_EFD", "moe.routed_experts.inner_experts.w3_EFD",
				"moe.routed_experts.inner_experts.w2_EDF", "moe.expert_bias_E"}
		}
		out = append(out, stack(tt+names[0], experts("gate_proj")...), stack(tt+names[1], experts("up_proj")...),
			stack(tt+names[2], experts("down_proj")...),
			fixture.Tensor{Name: tt + names[3], DType: safetensors.F32, Shape: []uint64{uint64(q.Experts)}, Data: make([]byte, 4*q.Experts)})
	}
	out = append(out, fixture.Tensor{Name: "rotary_emb.inv_freq", DType: safetensors.F32, Shape: []uint64{4}, Data: make([]byte, 16)})
	if len(m) != 0 {
		panic(fmt.Sprint("unconverted: ", m))
	}
	return out
}

// hfV5Fused fuses each layer's experts as transformers v5 stores them.
func hfV5Fused(q fixture.Qwen3) []fixture.Tensor {
	m := setOf(q.Tensors(safetensors.BF16))
	var out []fixture.Tensor
	for i := range q.Layers {
		var gateUp, down []fixture.Tensor
		for e := range q.Experts {
			p := fmt.Sprintf("model.layers.%d.mlp.experts.%d.", i, e)
			gateUp = append(gateUp, rows("", m.take(p+"gate_proj.weight", ""), m.take(p+"up_proj.weight", "")))
			down = append(down, m.take(p+"down_proj.weight", ""))
		}
		p := fmt.Sprintf("model.layers.%d.mlp.experts.", i)
		out = append(out, stack(p+"gate_up_proj", gateUp...), stack(p+"down_proj", down...))
	}
	return append(out, m.list()...)
}

// megatron converts a dense HF model to Megatron-Core names and fusions.
func megatron(q fixture.Qwen3) []fixture.Tensor {
	m := setOf(q.Tensors(safetensors.BF16))
	out := []fixture.Tensor{m.take("model.embed_tokens.weight", "embedding.word_embeddings.weight"),
		m.take("model.norm.weight", "decoder.final_layernorm.weight")}
	perGroup := uint64(q.Heads / q.KVHeads)
	hd := uint64(q.HeadDim)
	for i := range q.Layers {
		hf := fmt.Sprintf("model.layers.%d.", i)
		mg := fmt.Sprintf("decoder.layers.%d.", i)
		qp, kp, vp := m.take(hf+"self_attn.q_proj.weight", ""), m.take(hf+"self_attn.k_proj.weight", ""), m.take(hf+"self_attn.v_proj.weight", "")
		var qkv []fixture.Tensor
		for g := range uint64(q.KVHeads) {
			qkv = append(qkv, rowBlock(qp, g*perGroup*hd, perGroup*hd), rowBlock(kp, g*hd, hd), rowBlock(vp, g*hd, hd))
		}
		out = append(out, rows(mg+"self_attention.linear_qkv.weight", qkv...),
			m.take(hf+"input_layernorm.weight", mg+"self_attention.linear_qkv.layer_norm_weight"),
			m.take(hf+"self_attn.o_proj.weight", mg+"self_attention.linear_proj.weight"),
			m.take(hf+"self_attn.q_norm.weight", mg+"self_attention.q_layernorm.weight"),
			m.take(hf+"self_attn.k_norm.weight", mg+"self_attention.k_layernorm.weight"),
			rows(mg+"mlp.linear_fc1.weight", m.take(hf+"mlp.gate_proj.weight", ""), m.take(hf+"mlp.up_proj.weight", "")),
			m.take(hf+"post_attention_layernorm.weight", mg+"mlp.linear_fc1.layer_norm_weight"),
			m.take(hf+"mlp.down_proj.weight", mg+"mlp.linear_fc2.weight"),
			fixture.Tensor{Name: mg + "self_attention.core_attention._extra_state", DType: safetensors.U8, Shape: []uint64{3}, Data: []byte{1, 2, 3}})
	}
	if len(m) != 0 {
		panic(fmt.Sprint("unconverted: ", m))
	}
	return out
}

func TestFrameworkAdapters(t *testing.T) {
	llama := fixture.Tiny
	llama.Llama = true
	dense := fixture.Tiny
	moe := fixture.TinyMoE
	tests := []struct {
		name        string
		q           fixture.Qwen3
		export      []fixture.Tensor
		wantAdapter string
		dropped     int
	}{
		{"torchtitan qwen3 dense", dense, torchtitanNative(dense, false, false), "torchtitan-qwen3", 0},
		{"torchtitan qwen3 moe", moe, torchtitanNative(moe, false, false), "torchtitan-qwen3", moe.Layers},
		{"torchtitan qwen3 moe, newer names", moe, torchtitanNative(moe, true, false), "torchtitan-qwen3", moe.Layers},
		{"torchtitan llama3", llama, torchtitanNative(llama, false, true), "torchtitan-llama3", 0},
		{"transformers v5 fused experts", moe, hfV5Fused(moe), "hf-v5-fused", 0},
		{"megatron", dense, megatron(dense), "megatron", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := diffPaths(t, writePublished(t, tt.q, nil), writeExport(t, tt.export), DiffOptions{})
			if d.Exported.View.Adapter != tt.wantAdapter {
				t.Fatalf("adapter %s, want %s", d.Exported.View.Adapter, tt.wantAdapter)
			}
			dropped, weightsOnly, needs := 0, 0, 0
			for _, f := range d.Findings {
				switch f.Code {
				case CodeAdapterDropped:
					dropped++
				case CodeWeightsOnlyExport: // framework exports are weights only
					weightsOnly++
				case CodeNeedsAdapter:
					needs++
				default:
					t.Errorf("structural finding: %v", f)
				}
			}
			if weightsOnly != 1 {
				t.Errorf("%d weights_only_export, want 1", weightsOnly)
			}
			if needs != 1 {
				t.Errorf("%d needs_adapter, want 1: no export here loads in transformers as it is", needs)
			}
			if dropped != tt.dropped {
				t.Errorf("%d adapter_dropped, want %d", dropped, tt.dropped)
			}
			rep, err := d.CompareValues(context.Background(), ValueOptions{})
			if err != nil {
				t.Fatal(err)
			}
			fs := rep.Findings
			if len(fs) != 0 || rep.Compared != len(d.Published.View.Tensors) || rep.BitIdentical != rep.Compared {
				t.Errorf("values: %+v\n%v", rep, fs)
			}
		})
	}
}

func TestFlippedExpertSlice(t *testing.T) {
	q := fixture.TinyMoE
	export := torchtitanNative(q, false, false)
	for i, x := range export {
		if x.Name == "layers.1.moe.experts.w1" {
			slice := len(x.Data) / q.Experts
			data := slices.Clone(x.Data)
			for k := 3 * slice; k < 4*slice; k += 2 {
				data[k+1] ^= 0x80 // flip the sign of every BF16 value of expert 3
			}
			export[i].Data = data
		}
	}
	d := diffPaths(t, writePublished(t, q, nil), writeExport(t, export), DiffOptions{})
	vr, err := d.CompareValues(context.Background(), ValueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fs := vr.Findings
	if len(fs) != 1 || fs[0].Key != "model.layers.1.mlp.experts.3.gate_proj.weight" || fs[0].Code != CodeReinitialized {
		t.Errorf("want one finding on model.layers.1.mlp.experts.3.gate_proj.weight, got %v", fs)
	}
}

func TestLlamaWithoutPermutation(t *testing.T) {
	q := fixture.Tiny
	q.Llama = true
	d := diffPaths(t, writePublished(t, q, nil), writeExport(t, torchtitanNative(q, false, false)), DiffOptions{})
	vr, err := d.CompareValues(context.Background(), ValueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fs := vr.Findings
	var keys []string
	for _, f := range fs {
		keys = append(keys, f.Key)
	}
	var want []string
	for i := range q.Layers {
		want = append(want, fmt.Sprintf("model.layers.%d.self_attn.q_proj.weight", i), fmt.Sprintf("model.layers.%d.self_attn.k_proj.weight", i))
	}
	slices.Sort(keys)
	slices.Sort(want)
	if !slices.Equal(keys, want) {
		t.Errorf("findings on %v, want q_proj and k_proj only", keys)
	}
}

func TestStaleMapping(t *testing.T) {
	q := fixture.Tiny
	pub := writePublished(t, q, func(cfg map[string]any) { cfg["num_key_value_heads"] = 3 })
	d := diffPaths(t, pub, writeExport(t, megatron(q)), DiffOptions{})
	var errs []string
	for _, f := range d.Findings {
		if f.Code == CodeAdapterError {
			errs = append(errs, f.Key+": "+f.Message)
		}
	}
	if len(errs) != q.Layers || !strings.HasPrefix(errs[0], "decoder.layers.0.self_attention.linear_qkv.weight: dimension 0 (64) is not 3 groups") ||
		!strings.Contains(errs[0], "megatron:") {
		t.Errorf("adapter errors: %v", errs)
	}
}

func TestExplicitAdapterAndExplainData(t *testing.T) {
	q := fixture.TinyMoE
	pub := writePublished(t, q, nil)
	exp := writeExport(t, torchtitanNative(q, false, false))
	d := diffPaths(t, pub, exp, DiffOptions{})
	e, ok := d.Exported.View.Tensor("model.layers.1.mlp.experts.3.gate_proj.weight")
	if !ok || e.Source != "layers.1.moe.experts.w1[3]" || !strings.HasPrefix(e.Rule, "torchtitan-qwen3:") || len(e.Segments) != 1 {
		t.Errorf("%+v", e)
	}
}
