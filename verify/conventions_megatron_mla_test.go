package verify

import (
	"fmt"
	"testing"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
)

// mgMoEOpts say which Megatron-Core state dict megatronMoEOf builds.
type mgMoEOpts struct {
	local      bool // local spec: q_layernorm/kv_layernorm kept apart, no fused norms
	grouped    bool // TEGroupedMLP experts (weight{e}), else SequentialMLP
	swapShared bool // broken: the shared experts' linear_fc1 as [up; gate]
	plainBias  bool // broken: the QKV bias concatenated q, k, v, not per group
}

// mgDeepSeekAttn is the MLA part of get_common_mapping_list
// (NVIDIA-NeMo/Megatron-Bridge src/megatron/bridge/models/deepseek/common.py
// @ 067f987d, used by deepseek_v2_bridge.py, deepseek_v3_bridge.py and
// kimi/kimi_bridge.py; Moonlight is DeepseekV3ForCausalLM), HF name to
// Megatron name, for the TE spec and, where they differ, the local spec
// ("# Mcore local spec"):
//
//	"decoder.layers.*.self_attention.linear_kv_down_proj.weight": "model.layers.*.self_attn.kv_a_proj_with_mqa.weight",
//	"decoder.layers.*.self_attention.linear_kv_up_proj.weight": "model.layers.*.self_attn.kv_b_proj.weight",
//	"decoder.layers.*.self_attention.linear_kv_up_proj.layer_norm_weight": "model.layers.*.self_attn.kv_a_layernorm.weight",
//	"decoder.layers.*.self_attention.kv_layernorm.weight": "model.layers.*.self_attn.kv_a_layernorm.weight",
//	"decoder.layers.*.self_attention.linear_q_down_proj.weight": "model.layers.*.self_attn.q_a_proj.weight",
//	"decoder.layers.*.self_attention.linear_q_up_proj.weight": "model.layers.*.self_attn.q_b_proj.weight",
//	"decoder.layers.*.self_attention.linear_q_up_proj.layer_norm_weight": "model.layers.*.self_attn.q_a_layernorm.weight",
//	"decoder.layers.*.self_attention.linear_q_proj.weight": "model.layers.*.self_attn.q_proj.weight",
var mgDeepSeekAttn = map[string][2]string{ // HF: TE spec, local spec
	"kv_a_proj_with_mqa": {"linear_kv_down_proj.weight", "linear_kv_down_proj.weight"},
	"kv_b_proj":          {"linear_kv_up_proj.weight", "linear_kv_up_proj.weight"},
	"kv_a_layernorm":     {"linear_kv_up_proj.layer_norm_weight", "kv_layernorm.weight"},
	"q_a_proj":           {"linear_q_down_proj.weight", "linear_q_down_proj.weight"},
	"q_b_proj":           {"linear_q_up_proj.weight", "linear_q_up_proj.weight"},
	"q_a_layernorm":      {"linear_q_up_proj.layer_norm_weight", "q_layernorm.weight"},
	"q_proj":             {"linear_q_proj.weight", "linear_q_proj.weight"},
	"o_proj":             {"linear_proj.weight", "linear_proj.weight"},
}

// megatronMoEOf converts an HF DeepSeek-V2/V3 (hfDeepSeekV3) or GLM-4.5
// (hfGLM45) model to Megatron-Core names by the bridges' mappings:
// deepseek/common.py (above, and "decoder.layers.*.pre_mlp_layernorm.weight"
// for MoE layers, "mlp.linear_fc1.layer_norm_weight" for dense ones in the
// TE spec, "mlp.router.expert_bias": "mlp.gate.e_score_correction_bias",
// GatedMLPMapping "mlp.shared_experts.linear_fc1.weight" of gate and up,
// "mlp.shared_experts.linear_fc2.weight") and glm/glm45_bridge.py
// @ 067f987d (the same MoE names, QKVMapping for linear_qkv.weight and
// linear_qkv.bias, linear_qkv.layer_norm_weight in the TE spec).
// GatedMLPMapping is torch.cat([gate, up], dim=0); QKVMapping is
// merge_qkv_weights / merge_qkv_biases (mergeQKV).
func megatronMoEOf(m *hfModel, o mgMoEOpts) []fixture.Tensor {
	out := []fixture.Tensor{m.take("model.embed_tokens.weight").tensor("embedding.word_embeddings.weight"),
		m.take("model.norm.weight").tensor("decoder.final_layernorm.weight"),
		m.take("lm_head.weight").tensor("output_layer.weight")}
	spec := 0
	if o.local {
		spec = 1
	}
	nExperts := 0
	for i := range cvLayers {
		hf, mg := fmt.Sprintf("model.layers.%d.", i), fmt.Sprintf("decoder.layers.%d.", i)
		sa, moe := hf+"self_attn.", false
		if _, ok := m.t[hf+"mlp.gate.weight"]; ok {
			moe, nExperts = true, m.t[hf+"mlp.gate.weight"].shape[0]
		}
		in := mg + "input_layernorm.weight" // MLA: the norm feeds two projections, never fused
		if _, ok := m.t[sa+"k_proj.weight"]; ok {
			q, k, v := m.take(sa+"q_proj.weight"), m.take(sa+"k_proj.weight"), m.take(sa+"v_proj.weight")
			qb, kb, vb := m.take(sa+"q_proj.bias"), m.take(sa+"k_proj.bias"), m.take(sa+"v_proj.bias")
			bias := mergeQKV(qb, kb, vb)
			if o.plainBias {
				bias = cat(0, qb, kb, vb)
			}
			out = append(out, mergeQKV(q, k, v).tensor(mg+"self_attention.linear_qkv.weight"),
				bias.tensor(mg+"self_attention.linear_qkv.bias"))
			if !o.local {
				in = mg + "self_attention.linear_qkv.layer_norm_weight"
			}
		}
		for hfName, mgName := range mgDeepSeekAttn {
			if x, ok := m.t[sa+hfName+".weight"]; ok {
				delete(m.t, sa+hfName+".weight")
				out = append(out, x.tensor(mg+"self_attention."+mgName[spec]))
			}
		}
		post := mg + "pre_mlp_layernorm.weight"
		if !moe && !o.local {
			post = mg + "mlp.linear_fc1.layer_norm_weight"
		}
		out = append(out, m.take(hf+"input_layernorm.weight").tensor(in), m.take(hf+"post_attention_layernorm.weight").tensor(post))
		if !moe {
			out = append(out, cat(0, m.take(hf+"mlp.gate_proj.weight"), m.take(hf+"mlp.up_proj.weight")).tensor(mg+"mlp.linear_fc1.weight"),
				m.take(hf+"mlp.down_proj.weight").tensor(mg+"mlp.linear_fc2.weight"))
			continue
		}
		gate, up := m.take(hf+"mlp.shared_experts.gate_proj.weight"), m.take(hf+"mlp.shared_experts.up_proj.weight")
		if o.swapShared {
			gate, up = up, gate
		}
		out = append(out, m.take(hf+"mlp.gate.weight").tensor(mg+"mlp.router.weight"),
			m.take(hf+"mlp.gate.e_score_correction_bias").tensor(mg+"mlp.router.expert_bias"),
			cat(0, gate, up).tensor(mg+"mlp.shared_experts.linear_fc1.weight"),
			m.take(hf+"mlp.shared_experts.down_proj.weight").tensor(mg+"mlp.shared_experts.linear_fc2.weight"))
		for e := range nExperts {
			ep := fmt.Sprintf("%smlp.experts.%d.", hf, e)
			fc1 := cat(0, m.take(ep+"gate_proj.weight"), m.take(ep+"up_proj.weight"))
			fc2 := m.take(ep + "down_proj.weight")
			if o.grouped { // "decoder.layers.*.mlp.experts.linear_fc1.weight*"
				out = append(out, fc1.tensor(fmt.Sprintf("%smlp.experts.linear_fc1.weight%d", mg, e)),
					fc2.tensor(fmt.Sprintf("%smlp.experts.linear_fc2.weight%d", mg, e)))
			} else { // "decoder.layers.*.mlp.experts.local_experts.*.linear_fc1.weight"
				out = append(out, fc1.tensor(fmt.Sprintf("%smlp.experts.local_experts.%d.linear_fc1.weight", mg, e)),
					fc2.tensor(fmt.Sprintf("%smlp.experts.local_experts.%d.linear_fc2.weight", mg, e)))
			}
		}
	}
	return m.done(out)
}

// hfGLM45 is an HF GLM-4.5 model (huggingface/transformers
// src/transformers/models/glm4_moe/modeling_glm4_moe.py: attention_bias
// q/k/v biases, no o_proj bias; Glm4MoeMoE's gate (weight and
// e_score_correction_bias), experts and shared_experts; layers before
// first_k_dense_replace dense): layer 0 dense, layer 1 MoE.
func hfGLM45() *hfModel {
	m := &hfModel{}
	m.add("model.embed_tokens.weight", cvVocab, cvHidden)
	const n = 4
	for i := range cvLayers {
		p := fmt.Sprintf("model.layers.%d.", i)
		m.add(p+"input_layernorm.weight", cvHidden)
		m.add(p+"post_attention_layernorm.weight", cvHidden)
		m.attention(p, false, true)
		if i == 0 {
			m.add(p+"mlp.gate_proj.weight", cvInter, cvHidden)
			m.add(p+"mlp.up_proj.weight", cvInter, cvHidden)
			m.add(p+"mlp.down_proj.weight", cvHidden, cvInter)
			continue
		}
		m.add(p+"mlp.gate.weight", n, cvHidden)
		m.add(p+"mlp.gate.e_score_correction_bias", n)
		m.experts(p+"mlp.experts.", n, [3]string{"gate_proj", "up_proj", "down_proj"})
		m.add(p+"mlp.shared_experts.gate_proj.weight", cvMoEInter, cvHidden)
		m.add(p+"mlp.shared_experts.up_proj.weight", cvMoEInter, cvHidden)
		m.add(p+"mlp.shared_experts.down_proj.weight", cvHidden, cvMoEInter)
	}
	m.add("model.norm.weight", cvHidden)
	m.add("lm_head.weight", cvVocab, cvHidden)
	m.setConfig("glm4_moe", map[string]any{"n_routed_experts": n, "n_shared_experts": 1, "first_k_dense_replace": 1, "attention_bias": true})
	return m
}

func TestMegatronMoEConventions(t *testing.T) {
	shared := []string{"model.layers.1.mlp.shared_experts.gate_proj.weight", "model.layers.1.mlp.shared_experts.up_proj.weight"}
	var glmBias []string
	for i := range cvLayers {
		for _, p := range []string{"q", "k", "v"} {
			glmBias = append(glmBias, fmt.Sprintf("model.layers.%d.self_attn.%s_proj.bias", i, p))
		}
	}
	const ds = "NVIDIA-NeMo/Megatron-Bridge src/megatron/bridge/models/deepseek/common.py get_common_mapping_list @ 067f987d (2026-08-22)"
	runConventions(t, []convention{
		{
			name:    "TE spec, DeepSeek-V3 / Kimi-K2 MLA with q_lora_rank, TEGroupedMLP, shared experts, expert_bias",
			source:  ds + "; deepseek_v3_bridge.py, kimi/kimi_bridge.py",
			model:   func() *hfModel { return hfDeepSeekV3(dsQLora, false) },
			export:  func(m *hfModel) []fixture.Tensor { return megatronMoEOf(m, mgMoEOpts{grouped: true}) },
			adapter: "megatron",
			broken: func(m *hfModel) []fixture.Tensor {
				return megatronMoEOf(m, mgMoEOpts{grouped: true, swapShared: true})
			},
			brokenKeys: shared,
		},
		{
			name:    "local spec, DeepSeek-V2-Lite / Moonlight MLA without q_lora_rank (linear_q_proj, kv_layernorm), SequentialMLP",
			source:  ds + " (\"# Mcore local spec\", \"# For models without MLA\"); deepseek_v2_bridge.py",
			model:   func() *hfModel { return hfDeepSeekV3(0, false) },
			export:  func(m *hfModel) []fixture.Tensor { return megatronMoEOf(m, mgMoEOpts{local: true}) },
			adapter: "megatron",
			broken: func(m *hfModel) []fixture.Tensor {
				return megatronMoEOf(m, mgMoEOpts{local: true, swapShared: true})
			},
			brokenKeys: shared,
		},
		{
			name:       "TE spec, GLM-4.5: QKV bias per query group, shared experts, expert_bias",
			source:     "NVIDIA-NeMo/Megatron-Bridge src/megatron/bridge/models/glm/glm45_bridge.py mapping_registry @ 067f987d (2026-08-22)",
			model:      hfGLM45,
			export:     func(m *hfModel) []fixture.Tensor { return megatronMoEOf(m, mgMoEOpts{grouped: true}) },
			adapter:    "megatron",
			broken:     func(m *hfModel) []fixture.Tensor { return megatronMoEOf(m, mgMoEOpts{grouped: true, plainBias: true}) },
			brokenKeys: glmBias,
		},
	})
}
