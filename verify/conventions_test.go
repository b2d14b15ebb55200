package verify

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/adapter"
	"github.com/ckptcheck/ckptcheck/internal/fixture"
)

// A convention is one upstream checkpoint layout: a published HF model
// (arange values), the export a framework writes of it, built by fixture
// code that follows the cited upstream lines operation by operation (never
// by running the adapter backwards), the adapter auto must pick for it,
// and a negative control (the wrong order, the missing permutation) whose
// values must fail.
type convention struct {
	name string
	// source is where the layout is written upstream: repository, path,
	// and commit or tag.
	source  string
	model   func() *hfModel
	export  func(m *hfModel) []fixture.Tensor
	adapter string
	opt     DiffOptions
	dropped int      // adapter_dropped findings
	want    []string // other findings ("severity code key"), needs_adapter aside
	// uncompared counts published tensors with no exported counterpart
	// (expected, and listed in want).
	uncompared int
	broken     func(m *hfModel) []fixture.Tensor
	brokenKeys []string // keys whose values the control must make differ
}

func runConventions(t *testing.T, cases []convention) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := c.model()
			pub := writeHFModel(t, m)
			c.opt.WeightsOnly = true // framework exports are weights only: the files beside them are another test's
			d := diffPaths(t, pub, export(t, c.export(m.clone()), nil), c.opt)
			if d.Exported.View.Adapter != c.adapter {
				t.Fatalf("%s: adapter %s, want %s", c.source, d.Exported.View.Adapter, c.adapter)
			}
			var got []string
			dropped, needs := 0, 0
			for _, f := range d.Findings {
				switch f.Code {
				case CodeAdapterDropped:
					dropped++
				case CodeNeedsAdapter:
					needs++
				default:
					got = append(got, fmt.Sprintf("%s %s %s", f.Severity, f.Code, f.Key))
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, c.want) || dropped != c.dropped || (needs == 1) != (c.adapter != "hf") {
				t.Errorf("%s: findings %q, %d dropped, %d needs_adapter; want %q, %d dropped", c.source, got, dropped, needs, c.want, c.dropped)
			}
			rep, err := d.CompareValues(context.Background(), ValueOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if want := len(d.Published.View.Tensors) - c.uncompared; len(rep.Findings) != 0 || rep.Compared != want || rep.BitIdentical != want {
				t.Errorf("%s: %d compared, %d bit-identical, want %d; %v", c.source, rep.Compared, rep.BitIdentical, want, rep.Findings)
			}
			if c.broken == nil {
				t.Fatal("no negative control")
			}
			d = diffPaths(t, pub, export(t, c.broken(m.clone()), nil), c.opt)
			if d.Exported.View.Adapter != c.adapter {
				t.Fatalf("negative control: adapter %s, want %s", d.Exported.View.Adapter, c.adapter)
			}
			rep, err = d.CompareValues(context.Background(), ValueOptions{})
			if err != nil {
				t.Fatal(err)
			}
			flagged := map[string]bool{}
			for _, f := range rep.Findings {
				if f.Code == CodeValueMismatch || f.Code == CodeReinitialized {
					flagged[f.Key] = true
				}
			}
			for _, k := range c.brokenKeys {
				if !flagged[k] {
					t.Errorf("negative control: %s not flagged by --values (flagged: %v)", k, flagged)
				}
			}
			if len(flagged) != len(c.brokenKeys) {
				t.Errorf("negative control: %d tensors flagged, want %d (%v)", len(flagged), len(c.brokenKeys), flagged)
			}
		})
	}
}

// Dimensions of the convention models: small, and all distinct where a
// transposed layout must not look like the plain one (2F != D, F != D).
const (
	cvVocab, cvHidden, cvHeads, cvKV, cvHeadDim = 16, 8, 4, 2, 4
	cvInter, cvMoEInter, cvLayers               = 12, 6, 2
)

func (m *hfModel) setConfig(modelType string, extra map[string]any) {
	m.config = map[string]any{"model_type": modelType, "vocab_size": cvVocab, "hidden_size": cvHidden,
		"num_attention_heads": cvHeads, "num_key_value_heads": cvKV, "head_dim": cvHeadDim,
		"num_hidden_layers": cvLayers, "intermediate_size": cvInter, "moe_intermediate_size": cvMoEInter,
		"tie_word_embeddings": false, "torch_dtype": "float32"}
	for k, v := range extra {
		m.config[k] = v
	}
}

// attention adds HF's q/k/v/o projections under p (and q/k norms, and q/k/v
// biases).
func (m *hfModel) attention(p string, qkNorm, bias bool) {
	m.add(p+"self_attn.q_proj.weight", cvHeads*cvHeadDim, cvHidden)
	m.add(p+"self_attn.k_proj.weight", cvKV*cvHeadDim, cvHidden)
	m.add(p+"self_attn.v_proj.weight", cvKV*cvHeadDim, cvHidden)
	if bias {
		m.add(p+"self_attn.q_proj.bias", cvHeads*cvHeadDim)
		m.add(p+"self_attn.k_proj.bias", cvKV*cvHeadDim)
		m.add(p+"self_attn.v_proj.bias", cvKV*cvHeadDim)
	}
	m.add(p+"self_attn.o_proj.weight", cvHidden, cvHeads*cvHeadDim)
	if qkNorm {
		m.add(p+"self_attn.q_norm.weight", cvHeadDim)
		m.add(p+"self_attn.k_norm.weight", cvHeadDim)
	}
}

// experts adds n per-expert SwiGLU MLPs under p ("model.layers.0.mlp.experts."),
// each named by names (gate, up, down).
func (m *hfModel) experts(p string, n int, names [3]string) {
	for e := range n {
		ep := fmt.Sprintf("%s%d.", p, e)
		m.add(ep+names[0]+".weight", cvMoEInter, cvHidden)
		m.add(ep+names[1]+".weight", cvMoEInter, cvHidden)
		m.add(ep+names[2]+".weight", cvHidden, cvMoEInter)
	}
}

// hfLlama is an HF Llama-layout model: "llama" (no q/k norms), "qwen3"
// (with them), or "qwen3_moe" (with n experts a layer), or "qwen2" (q/k/v
// biases).
func hfLlama(modelType string, n int) *hfModel {
	m := &hfModel{}
	m.add("model.embed_tokens.weight", cvVocab, cvHidden)
	for i := range cvLayers {
		p := fmt.Sprintf("model.layers.%d.", i)
		m.add(p+"input_layernorm.weight", cvHidden)
		m.add(p+"post_attention_layernorm.weight", cvHidden)
		m.attention(p, modelType == "qwen3" || modelType == "qwen3_moe", modelType == "qwen2")
		if n == 0 {
			m.add(p+"mlp.gate_proj.weight", cvInter, cvHidden)
			m.add(p+"mlp.up_proj.weight", cvInter, cvHidden)
			m.add(p+"mlp.down_proj.weight", cvHidden, cvInter)
			continue
		}
		m.add(p+"mlp.gate.weight", n, cvHidden)
		m.experts(p+"mlp.experts.", n, [3]string{"gate_proj", "up_proj", "down_proj"})
	}
	m.add("model.norm.weight", cvHidden)
	m.add("lm_head.weight", cvVocab, cvHidden)
	m.setConfig(modelType, map[string]any{"num_experts": n})
	return m
}

// stackExperts is torchtitan's MoEStateDictAdapter._concatenate_expert_weights
// (torchtitan/models/utils.py @ v0.2.2, unchanged at b5bcd76c):
// sorted_expert_ids = sorted(experts.keys()); torch.stack(sorted_experts, dim=0),
// with integer ids since fb549717 (v0.2.0). order, when set, is the order
// of a broken export.
func stackExperts(m *hfModel, p, proj string, n int, order []int) nd {
	if order == nil {
		for e := range n {
			order = append(order, e)
		}
	}
	ts := make([]nd, n)
	for i, e := range order {
		ts[i] = m.take(fmt.Sprintf("%s%d.%s.weight", p, e, proj))
	}
	return stackND(ts...)
}

// lexicographic is the expert order before fb549717 ("Fix HF -> Torchtitan
// Expert Conversion Sorting Bug", 2025-10-17): string ids sorted as strings.
func lexicographic(n int) []int {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprint(i)
	}
	slices.Sort(ids)
	out := make([]int, n)
	for i, s := range ids {
		fmt.Sscan(s, &out[i])
	}
	return out
}

// writeHFModel writes m as a published checkpoint: two shards, an index and
// its config.json.
func writeHFModel(t *testing.T, m *hfModel) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "published")
	if err := fixture.WriteSharded(dir, m.tensors(), 2, m.config); err != nil {
		t.Fatal(err)
	}
	return dir
}

func mustChain(t *testing.T, spec string) adapter.Chain {
	t.Helper()
	c, err := (&adapter.Registry{}).ParseChain(spec)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
