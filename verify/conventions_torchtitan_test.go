package verify

import (
	"fmt"
	"testing"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
)

// torchtitan's naming generations of Qwen3 (pytorch/torchtitan).
type ttGen struct {
	attn, head, w1, w3, w2, bias string
}

var (
	// v0.2.2 (73a0e697): torchtitan/models/qwen3/model/state_dict_adapter.py,
	// torchtitan/models/moe/moe.py lines 143-145 (w1, w2, w3).
	ttG1 = ttGen{"attention.", "output.weight", "moe.experts.w1", "moe.experts.w3", "moe.experts.w2", "moe.expert_bias"}
	// 200100e7 (2026-05-27) .. fc5a7296 (2026-07-16): torchtitan/models/common/moe.py
	// w1_EFD, w2_EDF, w3_EFD, expert_bias_E; the adapter's map at 2816b97c.
	ttG2 = ttGen{"attention.qkv_linear.", "lm_head.weight", "moe.experts.w1_EFD", "moe.experts.w3_EFD", "moe.experts.w2_EDF", "moe.expert_bias_E"}
	// 3101b42f (2026-07-16) .. b5bcd76c: RoutedExperts.inner_experts.
	ttG3 = ttGen{"attention.qkv_linear.", "lm_head.weight", "moe.routed_experts.inner_experts.w1_EFD",
		"moe.routed_experts.inner_experts.w3_EFD", "moe.routed_experts.inner_experts.w2_EDF", "moe.expert_bias_E"}
)

// ttOpts say which torchtitan state dict ttQwen3 builds.
type ttOpts struct {
	g       ttGen
	experts int   // 0: dense
	fuse    bool  // the fused wqkv of ad7a86533
	permute bool  // Llama 3: q and k reverse-permuted
	swapKV  bool  // broken: k and v swapped in the fused groups
	order   []int // broken: this expert order
}

// ttQwen3 is torchtitan's native Qwen3 (or Llama 3) state dict of an HF
// model: its from_hf map, renames only, experts stacked.
func ttQwen3(m *hfModel, o ttOpts) []fixture.Tensor {
	g, n, order := o.g, o.experts, o.order
	out := []fixture.Tensor{m.take("model.embed_tokens.weight").tensor("tok_embeddings.weight"),
		m.take("model.norm.weight").tensor("norm.weight"), m.take("lm_head.weight").tensor(g.head)}
	for i := range cvLayers {
		hf, tt := fmt.Sprintf("model.layers.%d.", i), fmt.Sprintf("layers.%d.", i)
		q, k, v := m.take(hf+"self_attn.q_proj.weight"), m.take(hf+"self_attn.k_proj.weight"), m.take(hf+"self_attn.v_proj.weight")
		if o.permute {
			q, k = reversePermute(q, cvHeads), reversePermute(k, cvKV)
		}
		if o.fuse {
			out = append(out, separateToFusedQKV(q, k, v, o.swapKV).tensor(tt+"attention.qkv_linear.wqkv.weight"))
		} else {
			out = append(out, q.tensor(tt+g.attn+"wq.weight"), k.tensor(tt+g.attn+"wk.weight"), v.tensor(tt+g.attn+"wv.weight"))
		}
		out = append(out, m.take(hf+"self_attn.o_proj.weight").tensor(tt+"attention.wo.weight"),
			m.take(hf+"input_layernorm.weight").tensor(tt+"attention_norm.weight"),
			m.take(hf+"post_attention_layernorm.weight").tensor(tt+"ffn_norm.weight"))
		if _, ok := m.t[hf+"self_attn.q_norm.weight"]; ok {
			out = append(out, m.take(hf+"self_attn.q_norm.weight").tensor(tt+"attention.q_norm.weight"),
				m.take(hf+"self_attn.k_norm.weight").tensor(tt+"attention.k_norm.weight"))
		}
		if n == 0 {
			out = append(out, m.take(hf+"mlp.gate_proj.weight").tensor(tt+"feed_forward.w1.weight"),
				m.take(hf+"mlp.up_proj.weight").tensor(tt+"feed_forward.w3.weight"),
				m.take(hf+"mlp.down_proj.weight").tensor(tt+"feed_forward.w2.weight"))
			continue
		}
		ep := hf + "mlp.experts."
		out = append(out, m.take(hf+"mlp.gate.weight").tensor(tt+"moe.router.gate.weight"),
			stackExperts(m, ep, "gate_proj", n, order).tensor(tt+g.w1),
			stackExperts(m, ep, "up_proj", n, order).tensor(tt+g.w3),
			stackExperts(m, ep, "down_proj", n, order).tensor(tt+g.w2),
			generate([]int{n}, func([]int) float32 { return 0 }).tensor(tt+g.bias)) // register_buffer(torch.zeros)
	}
	return m.done(out)
}

// separateToFusedQKV is torchtitan's StateDictAdapter.separate_to_fused_qkv
// (torchtitan/protocols/state_dict_adapter.py @ ad7a86533):
//
//	q = wq.view(n_kv_heads, heads_per_kv, head_dim, dim)
//	k = wk.view(n_kv_heads, 1, head_dim, dim)
//	v = wv.view(n_kv_heads, 1, head_dim, dim)
//	fused = torch.cat([q, k, v], dim=1)
//	return fused.reshape(n_kv_heads * r_dim * head_dim, dim)
//
// swapKV builds the broken cat([q, v, k]).
func separateToFusedQKV(wq, wk, wv nd, swapKV bool) nd {
	hpk := cvHeads / cvKV
	q := wq.view(cvKV, hpk, cvHeadDim, cvHidden)
	k := wk.view(cvKV, 1, cvHeadDim, cvHidden)
	v := wv.view(cvKV, 1, cvHeadDim, cvHidden)
	if swapKV {
		k, v = v, k
	}
	return cat(1, q, k, v).view(cvKV*(hpk+2)*cvHeadDim, cvHidden)
}

// reversePermute is torchtitan's Llama 3 _reverse_permute
// (torchtitan/models/llama3/state_dict_adapter.py @ ad7a86533, and
// model/state_dict_adapter.py @ v0.2.2):
//
//	w.view(n_heads_arg, 2, dim1 // n_heads_arg // 2, dim2).transpose(1, 2).reshape(dim1, dim2)
func reversePermute(w nd, heads int) nd {
	dim1, dim2 := w.shape[0], w.shape[1]
	return w.view(heads, 2, dim1/heads/2, dim2).transpose(1, 2).view(dim1, dim2)
}

// ttBackendMoE is the transformers modeling backend's state dict with an
// MoE model (pytorch/torchtitan @ b5bcd76c, since af35cfb1):
// HFTransformerModel.model = the *ForCausalLM, so keys gain "model.";
// build_and_swap_native_moe puts torchtitan's MoE in the block's "mlp",
// holding router.gate.weight, routed_experts.inner_experts.w1_EFD/w3_EFD/
// w2_EDF (torchtitan/models/common/moe.py @ af35cfb1) and expert_bias_E.
// toHF applies its to_hf: k.removeprefix("model.").
func ttBackendMoE(m *hfModel, n int, toHF, swapGateUp bool) []fixture.Tensor {
	prefix := "model."
	if toHF {
		prefix = ""
	}
	var out []fixture.Tensor
	for i := range cvLayers {
		p := fmt.Sprintf("model.layers.%d.mlp.", i)
		gate, up := "gate_proj", "up_proj"
		if swapGateUp {
			gate, up = up, gate
		}
		out = append(out, m.take(p+"gate.weight").tensor(prefix+p+"router.gate.weight"),
			stackExperts(m, p+"experts.", gate, n, nil).tensor(prefix+p+"routed_experts.inner_experts.w1_EFD"),
			stackExperts(m, p+"experts.", up, n, nil).tensor(prefix+p+"routed_experts.inner_experts.w3_EFD"),
			stackExperts(m, p+"experts.", "down_proj", n, nil).tensor(prefix+p+"routed_experts.inner_experts.w2_EDF"),
			generate([]int{n}, func([]int) float32 { return 0 }).tensor(prefix+p+"expert_bias_E"))
	}
	for _, t := range m.rest() {
		t.Name = prefix + t.Name
		out = append(out, t)
	}
	return m.done(out)
}

func TestTorchtitanConventions(t *testing.T) {
	qwen3moe := func() *hfModel { return hfLlama("qwen3_moe", 12) }
	qwen3 := func() *hfModel { return hfLlama("qwen3", 0) }
	llama := func() *hfModel { return hfLlama("llama", 0) }
	var experts2to11 []string
	for i := range cvLayers {
		for e := 2; e < 12; e++ {
			for _, p := range []string{"gate_proj", "up_proj", "down_proj"} {
				experts2to11 = append(experts2to11, fmt.Sprintf("model.layers.%d.mlp.experts.%d.%s.weight", i, e, p))
			}
		}
	}
	perLayer := func(names ...string) []string {
		var out []string
		for i := range cvLayers {
			for _, n := range names {
				out = append(out, fmt.Sprintf("model.layers.%d.%s", i, n))
			}
		}
		return out
	}
	runConventions(t, []convention{
		{
			name:    "qwen3 moe, v0.2.x names",
			source:  "pytorch/torchtitan torchtitan/models/qwen3/model/state_dict_adapter.py @ v0.2.2; torchtitan/models/utils.py @ v0.2.2",
			model:   qwen3moe,
			export:  func(m *hfModel) []fixture.Tensor { return ttQwen3(m, ttOpts{g: ttG1, experts: 12}) },
			adapter: "torchtitan-qwen3", dropped: cvLayers,
			// Before fb549717 experts were stacked in string order.
			broken: func(m *hfModel) []fixture.Tensor {
				return ttQwen3(m, ttOpts{g: ttG1, experts: 12, order: lexicographic(12)})
			},
			brokenKeys: experts2to11,
		},
		{
			name:    "qwen3 moe, w1_EFD names (main 2026-05-27 .. 2026-07-16)",
			source:  "pytorch/torchtitan torchtitan/models/common/moe.py @ 200100e7; torchtitan/models/qwen3/state_dict_adapter.py @ 2816b97c",
			model:   qwen3moe,
			export:  func(m *hfModel) []fixture.Tensor { return ttQwen3(m, ttOpts{g: ttG2, experts: 12}) },
			adapter: "torchtitan-qwen3", dropped: cvLayers,
			broken: func(m *hfModel) []fixture.Tensor {
				return ttQwen3(m, ttOpts{g: ttG2, experts: 12, order: lexicographic(12)})
			},
			brokenKeys: experts2to11,
		},
		{
			name:    "qwen3 moe, routed_experts.inner_experts names (main since 2026-07-16)",
			source:  "pytorch/torchtitan torchtitan/models/common/moe.py @ 3101b42f; torchtitan/models/qwen3/state_dict_adapter.py @ b5bcd76c",
			model:   qwen3moe,
			export:  func(m *hfModel) []fixture.Tensor { return ttQwen3(m, ttOpts{g: ttG3, experts: 12}) },
			adapter: "torchtitan-qwen3", dropped: cvLayers,
			broken: func(m *hfModel) []fixture.Tensor {
				return ttQwen3(m, ttOpts{g: ttG3, experts: 12, order: lexicographic(12)})
			},
			brokenKeys: experts2to11,
		},
		{
			name:       "qwen3 fused wqkv (main 2026-04-16 .. 2026-06-19)",
			source:     "pytorch/torchtitan torchtitan/protocols/state_dict_adapter.py separate_to_fused_qkv @ ad7a86533",
			model:      qwen3,
			export:     func(m *hfModel) []fixture.Tensor { return ttQwen3(m, ttOpts{g: ttG2, fuse: true}) },
			adapter:    "torchtitan-qwen3",
			broken:     func(m *hfModel) []fixture.Tensor { return ttQwen3(m, ttOpts{g: ttG2, fuse: true, swapKV: true}) },
			brokenKeys: perLayer("self_attn.k_proj.weight", "self_attn.v_proj.weight"),
		},
		{
			name:    "llama3 fused wqkv, q/k reverse-permuted first (main 2026-04-16 .. 2026-06-19)",
			source:  "pytorch/torchtitan torchtitan/models/llama3/state_dict_adapter.py from_hf @ ad7a86533",
			model:   llama,
			export:  func(m *hfModel) []fixture.Tensor { return ttQwen3(m, ttOpts{g: ttG2, fuse: true, permute: true}) },
			adapter: "torchtitan-llama3",
			// The permutation forgotten: fused straight from HF's rows.
			broken:     func(m *hfModel) []fixture.Tensor { return ttQwen3(m, ttOpts{g: ttG2, fuse: true}) },
			brokenKeys: perLayer("self_attn.q_proj.weight", "self_attn.k_proj.weight"),
		},
		{
			name:       "transformers backend with an MoE model, state dict",
			source:     "pytorch/torchtitan torchtitan/experiments/transformers_modeling_backend/moe_replacement.py @ b5bcd76c (since af35cfb1)",
			model:      func() *hfModel { return hfLlama("qwen3_moe", 3) },
			export:     func(m *hfModel) []fixture.Tensor { return ttBackendMoE(m, 3, false, false) },
			adapter:    "torchtitan-hf",
			dropped:    cvLayers,
			broken:     func(m *hfModel) []fixture.Tensor { return ttBackendMoE(m, 3, false, true) },
			brokenKeys: expertKeys(3, "gate_proj", "up_proj"),
		},
		{
			name:       "transformers backend with an MoE model, to_hf export",
			source:     "pytorch/torchtitan torchtitan/experiments/transformers_modeling_backend/state_dict_adapter.py to_hf @ b5bcd76c",
			model:      func() *hfModel { return hfLlama("qwen3_moe", 3) },
			export:     func(m *hfModel) []fixture.Tensor { return ttBackendMoE(m, 3, true, false) },
			adapter:    "torchtitan-hf",
			dropped:    cvLayers,
			broken:     func(m *hfModel) []fixture.Tensor { return ttBackendMoE(m, 3, true, true) },
			brokenKeys: expertKeys(3, "gate_proj", "up_proj"),
		},
	})
}

// expertKeys lists the given projections of n experts in every layer.
func expertKeys(n int, projs ...string) []string {
	var out []string
	for i := range cvLayers {
		for e := range n {
			for _, p := range projs {
				out = append(out, fmt.Sprintf("model.layers.%d.mlp.experts.%d.%s.weight", i, e, p))
			}
		}
	}
	return out
}
