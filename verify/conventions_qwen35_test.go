package verify

import (
	"fmt"
	"testing"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
)

// GatedDeltaNet dimensions of the Qwen3.5 model: key and value widths
// (num_k_heads*head_k_dim, num_v_heads*head_v_dim) and value heads.
const q35Key, q35Value, q35VHeads, q35Conv, q35Experts = 4, 8, 2, 4, 3

// hfQwen35 is the language model of an HF Qwen3.5-MoE checkpoint
// (Qwen3_5MoeForConditionalGeneration: model.language_model.*), layer 0
// GatedDeltaNet (linear_attn), layer 1 full attention with q/k norms,
// every layer MoE with transformers' fused experts (Qwen3_5MoeExperts,
// src/transformers/models/qwen3_5_moe/modeling_qwen3_5_moe.py @ 009e78d6:
// gate_up_proj [E, 2I, H], down_proj [E, H, I]) and a gated shared expert.
// The vision tower is left out.
func hfQwen35() *hfModel {
	m := &hfModel{}
	m.add("model.language_model.embed_tokens.weight", cvVocab, cvHidden)
	for i := range cvLayers {
		p := fmt.Sprintf("model.language_model.layers.%d.", i)
		m.add(p+"input_layernorm.weight", cvHidden)
		m.add(p+"post_attention_layernorm.weight", cvHidden)
		if i == 0 {
			la := p + "linear_attn."
			m.add(la+"in_proj_qkv.weight", 2*q35Key+q35Value, cvHidden)
			m.add(la+"in_proj_z.weight", q35Value, cvHidden)
			m.add(la+"in_proj_a.weight", q35VHeads, cvHidden)
			m.add(la+"in_proj_b.weight", q35VHeads, cvHidden)
			m.add(la+"conv1d.weight", 2*q35Key+q35Value, 1, q35Conv)
			m.add(la+"A_log", q35VHeads)
			m.add(la+"dt_bias", q35VHeads)
			m.add(la+"norm.weight", q35Value/q35VHeads)
			m.add(la+"out_proj.weight", cvHidden, q35Value)
		} else {
			m.add(p+"self_attn.q_proj.weight", 2*cvHeads*cvHeadDim, cvHidden) // query and its output gate
			m.add(p+"self_attn.k_proj.weight", cvKV*cvHeadDim, cvHidden)
			m.add(p+"self_attn.v_proj.weight", cvKV*cvHeadDim, cvHidden)
			m.add(p+"self_attn.o_proj.weight", cvHidden, cvHeads*cvHeadDim)
			m.add(p+"self_attn.q_norm.weight", cvHeadDim)
			m.add(p+"self_attn.k_norm.weight", cvHeadDim)
		}
		m.add(p+"mlp.gate.weight", q35Experts, cvHidden)
		m.add(p+"mlp.experts.gate_up_proj", q35Experts, 2*cvMoEInter, cvHidden)
		m.add(p+"mlp.experts.down_proj", q35Experts, cvHidden, cvMoEInter)
		m.add(p+"mlp.shared_expert.gate_proj.weight", cvMoEInter, cvHidden)
		m.add(p+"mlp.shared_expert.up_proj.weight", cvMoEInter, cvHidden)
		m.add(p+"mlp.shared_expert.down_proj.weight", cvHidden, cvMoEInter)
		m.add(p+"mlp.shared_expert_gate.weight", 1, cvHidden)
	}
	m.add("model.language_model.norm.weight", cvHidden)
	m.add("lm_head.weight", cvVocab, cvHidden)
	m.setConfig("qwen3_5_moe_text", map[string]any{"num_experts": q35Experts})
	m.config = map[string]any{"model_type": "qwen3_5_moe", "tie_word_embeddings": false, "text_config": m.config}
	return m
}

// ttQwen35 is torchtitan's native Qwen3.5 state dict of an HF model
// (pytorch/torchtitan torchtitan/models/qwen3_5/state_dict_adapter.py @
// b5bcd76c: its from_hf_map renames; GatedDeltaNet's
// "q, k, v = value.split([kd, kd, vd], dim=0)" for in_proj_qkv and
// conv1d). The experts follow torchtitan's parameters, w1_EFD and w3_EFD
// [E, F, D] and w2_EDF [E, D, F] (torchtitan/models/common/moe.py), from
// transformers' layout, whose forward chunks gate then up:
// "linear(x, self.gate_up_proj[e]).chunk(2, dim=-1)". swapGateUp builds a
// broken export with the halves swapped.
func ttQwen35(m *hfModel, swapGateUp bool) []fixture.Tensor {
	out := []fixture.Tensor{m.take("model.language_model.embed_tokens.weight").tensor("tok_embeddings.weight"),
		m.take("model.language_model.norm.weight").tensor("norm.weight"), m.take("lm_head.weight").tensor("lm_head.weight")}
	for i := range cvLayers {
		hf, tt := fmt.Sprintf("model.language_model.layers.%d.", i), fmt.Sprintf("layers.%d.", i)
		for _, n := range []string{"q_proj", "k_proj", "v_proj", "o_proj", "q_norm", "k_norm"} {
			if x, ok := m.t[hf+"self_attn."+n+".weight"]; ok {
				delete(m.t, hf+"self_attn."+n+".weight")
				tn := map[string]string{"q_proj": "wq", "k_proj": "wk", "v_proj": "wv", "o_proj": "wo"}[n]
				if tn == "" {
					tn = n
				}
				out = append(out, x.tensor(tt+"attn."+tn+".weight"))
			}
		}
		if _, ok := m.t[hf+"linear_attn.in_proj_qkv.weight"]; ok {
			la := hf + "linear_attn."
			qkv := m.take(la+"in_proj_qkv.weight").split([]int{q35Key, q35Key, q35Value}, 0)
			conv := m.take(la+"conv1d.weight").split([]int{q35Key, q35Key, q35Value}, 0)
			for j, n := range []string{"q", "k", "v"} {
				out = append(out, qkv[j].tensor(tt+"attn.in_proj_"+n+".weight"), conv[j].tensor(tt+"attn.conv_"+n+".weight"))
			}
			for _, n := range []string{"in_proj_z.weight", "in_proj_a.weight", "in_proj_b.weight", "A_log", "dt_bias", "norm.weight", "out_proj.weight"} {
				out = append(out, m.take(la+n).tensor(tt+"attn."+n))
			}
		}
		gu := m.take(hf+"mlp.experts.gate_up_proj").chunk(2, 1)
		if swapGateUp {
			gu[0], gu[1] = gu[1], gu[0]
		}
		out = append(out,
			m.take(hf+"input_layernorm.weight").tensor(tt+"attention_norm.weight"),
			m.take(hf+"post_attention_layernorm.weight").tensor(tt+"ffn_norm.weight"),
			m.take(hf+"mlp.gate.weight").tensor(tt+"moe.router.gate.weight"),
			gu[0].tensor(tt+"moe.routed_experts.inner_experts.w1_EFD"),
			gu[1].tensor(tt+"moe.routed_experts.inner_experts.w3_EFD"),
			m.take(hf+"mlp.experts.down_proj").tensor(tt+"moe.routed_experts.inner_experts.w2_EDF"),
			m.take(hf+"mlp.shared_expert.gate_proj.weight").tensor(tt+"moe.shared_experts.w1.weight"),
			m.take(hf+"mlp.shared_expert.up_proj.weight").tensor(tt+"moe.shared_experts.w3.weight"),
			m.take(hf+"mlp.shared_expert.down_proj.weight").tensor(tt+"moe.shared_experts.w2.weight"),
			m.take(hf+"mlp.shared_expert_gate.weight").tensor(tt+"moe.shared_experts.gate.weight"),
			generate([]int{q35Experts}, func([]int) float32 { return 0 }).tensor(tt+"moe.expert_bias_E"))
	}
	return m.done(out)
}

// ttQwen35ToHF is the export torchtitan's Qwen3.5 to_hf writes of that
// state dict (torchtitan/models/qwen3_5/state_dict_adapter.py @ b5bcd76c):
//
//	w1 = moe_w1_by_layer[layer_num].transpose(-2, -1)
//	w3 = moe_w3_by_layer[layer_num].transpose(-2, -1)
//	gate_up_proj = torch.cat([w1, w3], dim=-1)
//	down_proj: hf_state_dict[hf_key] = value.transpose(-2, -1)
//
// with everything else under HF's names. reshapeDown builds a broken
// export that reshapes down_proj instead.
func ttQwen35ToHF(m *hfModel, reshapeDown bool) []fixture.Tensor {
	var out []fixture.Tensor
	for i := range cvLayers {
		p := fmt.Sprintf("model.language_model.layers.%d.mlp.experts.", i)
		w := m.take(p+"gate_up_proj").chunk(2, 1) // the native w1_EFD, w3_EFD
		down := m.take(p + "down_proj")           // the native w2_EDF
		downHF := down.transpose(-2, -1)
		if reshapeDown {
			downHF = down.view(down.shape[0], down.shape[2], down.shape[1])
		}
		out = append(out, cat(-1, w[0].transpose(-2, -1), w[1].transpose(-2, -1)).tensor(p+"gate_up_proj"), downHF.tensor(p+"down_proj"))
	}
	return m.done(append(out, m.rest()...))
}

func TestQwen35Conventions(t *testing.T) {
	var gateUp, down []string
	for i := range cvLayers {
		gateUp = append(gateUp, fmt.Sprintf("model.language_model.layers.%d.mlp.experts.gate_up_proj", i))
		down = append(down, fmt.Sprintf("model.language_model.layers.%d.mlp.experts.down_proj", i))
	}
	runConventions(t, []convention{
		{
			name:       "qwen3.5 moe, native state dict",
			source:     "pytorch/torchtitan torchtitan/models/qwen3_5/state_dict_adapter.py @ b5bcd76c; huggingface/transformers modeling_qwen3_5_moe.py @ 009e78d6",
			model:      hfQwen35,
			export:     func(m *hfModel) []fixture.Tensor { return ttQwen35(m, false) },
			adapter:    "torchtitan-qwen3_5",
			dropped:    cvLayers,
			broken:     func(m *hfModel) []fixture.Tensor { return ttQwen35(m, true) },
			brokenKeys: gateUp,
		},
		{
			name:       "qwen3.5 moe, torchtitan's to_hf export with transposed experts, adapter named",
			source:     "pytorch/torchtitan torchtitan/models/qwen3_5/state_dict_adapter.py to_hf @ b5bcd76c",
			model:      hfQwen35,
			export:     func(m *hfModel) []fixture.Tensor { return ttQwen35ToHF(m, false) },
			opt:        DiffOptions{Exported: SideOptions{Chain: mustChain(t, "torchtitan-qwen3_5-export"), Fixed: true}},
			adapter:    "torchtitan-qwen3_5-export",
			broken:     func(m *hfModel) []fixture.Tensor { return ttQwen35ToHF(m, true) },
			brokenKeys: down,
		},
	})
	// Without the adapter, the transposed export is what it is: transformers
	// cannot load it, and the diff says the shapes are transposed.
	m := hfQwen35()
	pub := writeHFModel(t, m)
	d := diffPaths(t, pub, export(t, ttQwen35ToHF(m.clone(), false), nil), DiffOptions{WeightsOnly: true})
	var got []string
	for _, f := range d.Findings {
		got = append(got, fmt.Sprintf("%s %s: %s", f.Code, f.Key, f.Message))
	}
	if len(got) != 2*cvLayers || d.Exported.View.Adapter != "hf" {
		t.Fatalf("adapter %s, findings %q", d.Exported.View.Adapter, got)
	}
	for _, f := range got {
		if !contains(f, "shape_mismatch") || !contains(f, "(transposed)") {
			t.Errorf("finding %q, want a transposed shape_mismatch", f)
		}
	}
}
