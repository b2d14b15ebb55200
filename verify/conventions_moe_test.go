package verify

import (
	"fmt"
	"testing"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
)

// MLA dimensions of the DeepSeek-V3 model (HF DeepseekV3Config names).
const (
	dsQLora, dsKVLora, dsNope, dsRope, dsV = 6, 5, 2, 2, 3
	dsExperts                              = 12
)

// hfDeepSeekV3 is an HF DeepSeek-V3 model: layer 0 dense, layer 1 MoE
// with shared experts and the score-correction bias, and, with mtp, layer
// 2 the multi-token-prediction layer (enorm, hnorm, eh_proj, a MoE block,
// shared_head.norm, and its copies of the embedding and the head).
// qLora 0 is the q_proj variant.
func hfDeepSeekV3(qLora int, mtp bool) *hfModel {
	m := &hfModel{}
	m.add("model.embed_tokens.weight", cvVocab, cvHidden)
	layers := cvLayers
	if mtp {
		layers++
	}
	for i := range layers {
		p := fmt.Sprintf("model.layers.%d.", i)
		if i == cvLayers {
			m.add(p+"enorm.weight", cvHidden)
			m.add(p+"hnorm.weight", cvHidden)
			m.add(p+"eh_proj.weight", cvHidden, 2*cvHidden)
			m.add(p+"embed_tokens.weight", cvVocab, cvHidden)
			m.add(p+"shared_head.norm.weight", cvHidden)
			m.add(p+"shared_head.head.weight", cvVocab, cvHidden)
		}
		m.add(p+"input_layernorm.weight", cvHidden)
		m.add(p+"post_attention_layernorm.weight", cvHidden)
		if qLora == 0 {
			m.add(p+"self_attn.q_proj.weight", cvHeads*(dsNope+dsRope), cvHidden)
		} else {
			m.add(p+"self_attn.q_a_proj.weight", qLora, cvHidden)
			m.add(p+"self_attn.q_a_layernorm.weight", qLora)
			m.add(p+"self_attn.q_b_proj.weight", cvHeads*(dsNope+dsRope), qLora)
		}
		m.add(p+"self_attn.kv_a_proj_with_mqa.weight", dsKVLora+dsRope, cvHidden)
		m.add(p+"self_attn.kv_a_layernorm.weight", dsKVLora)
		m.add(p+"self_attn.kv_b_proj.weight", cvHeads*(dsNope+dsV), dsKVLora)
		m.add(p+"self_attn.o_proj.weight", cvHidden, cvHeads*dsV)
		if i == 0 {
			m.add(p+"mlp.gate_proj.weight", cvInter, cvHidden)
			m.add(p+"mlp.up_proj.weight", cvInter, cvHidden)
			m.add(p+"mlp.down_proj.weight", cvHidden, cvInter)
			continue
		}
		m.add(p+"mlp.gate.weight", dsExperts, cvHidden)
		m.add(p+"mlp.gate.e_score_correction_bias", dsExperts)
		m.experts(p+"mlp.experts.", dsExperts, [3]string{"gate_proj", "up_proj", "down_proj"})
		m.add(p+"mlp.shared_experts.gate_proj.weight", cvMoEInter, cvHidden)
		m.add(p+"mlp.shared_experts.up_proj.weight", cvMoEInter, cvHidden)
		m.add(p+"mlp.shared_experts.down_proj.weight", cvHidden, cvMoEInter)
	}
	m.add("model.norm.weight", cvHidden)
	m.add("lm_head.weight", cvVocab, cvHidden)
	m.setConfig("deepseek_v3", map[string]any{"q_lora_rank": qLora, "kv_lora_rank": dsKVLora, "qk_nope_head_dim": dsNope,
		"qk_rope_head_dim": dsRope, "v_head_dim": dsV, "n_routed_experts": dsExperts, "n_shared_experts": 1,
		"first_k_dense_replace": 1, "num_nextn_predict_layers": map[bool]int{true: 1}[mtp]})
	return m
}

// ttDeepSeekV3 is torchtitan's native DeepSeek-V3 of an HF model, by the
// from_hf map of torchtitan/models/deepseek_v3/state_dict_adapter.py
// (@ b5bcd76c with g = ttG3, mtp_layers by _map_from_hf_layer_key;
// @ v0.2.2 with g = ttG1, output.weight, no MTP). torchtitan maps nothing
// to MTP's embed_tokens and shared_head.head: they are not exported.
// swapShared builds a broken export with the shared experts' w1 and w3
// swapped.
func ttDeepSeekV3(m *hfModel, g ttGen, mtp, swapShared bool) []fixture.Tensor {
	out := []fixture.Tensor{m.take("model.embed_tokens.weight").tensor("tok_embeddings.weight"),
		m.take("model.norm.weight").tensor("norm.weight"), m.take("lm_head.weight").tensor(g.head)}
	layers := cvLayers
	if mtp {
		layers++
	}
	attn := map[string]string{"q_proj": "wq", "q_a_proj": "wq_a", "q_a_layernorm": "q_norm", "q_b_proj": "wq_b",
		"kv_a_proj_with_mqa": "wkv_a", "kv_a_layernorm": "kv_norm", "kv_b_proj": "wkv_b", "o_proj": "wo"}
	for i := range layers {
		hf, tt := fmt.Sprintf("model.layers.%d.", i), fmt.Sprintf("layers.%d.", i)
		if i == cvLayers { // num_main_layers = len(model_config.layers)
			tt = fmt.Sprintf("mtp_layers.%d.", i-cvLayers)
			for hfName, ttName := range map[string]string{"enorm": "enorm", "hnorm": "hnorm", "eh_proj": "eh_proj", "shared_head.norm": "mtp_norm"} {
				out = append(out, m.take(hf+hfName+".weight").tensor(tt+ttName+".weight"))
			}
			m.take(hf + "embed_tokens.weight")
			m.take(hf + "shared_head.head.weight")
		}
		for hfName, ttName := range attn {
			if x, ok := m.t[hf+"self_attn."+hfName+".weight"]; ok {
				delete(m.t, hf+"self_attn."+hfName+".weight")
				out = append(out, x.tensor(tt+"attention."+ttName+".weight"))
			}
		}
		out = append(out, m.take(hf+"input_layernorm.weight").tensor(tt+"attention_norm.weight"),
			m.take(hf+"post_attention_layernorm.weight").tensor(tt+"ffn_norm.weight"))
		if i == 0 {
			out = append(out, m.take(hf+"mlp.gate_proj.weight").tensor(tt+"feed_forward.w1.weight"),
				m.take(hf+"mlp.up_proj.weight").tensor(tt+"feed_forward.w3.weight"),
				m.take(hf+"mlp.down_proj.weight").tensor(tt+"feed_forward.w2.weight"))
			continue
		}
		w1, w3 := "gate_proj", "up_proj"
		if swapShared {
			w1, w3 = w3, w1
		}
		ep := hf + "mlp.experts."
		out = append(out, m.take(hf+"mlp.gate.weight").tensor(tt+"moe.router.gate.weight"),
			m.take(hf+"mlp.gate.e_score_correction_bias").tensor(tt+g.bias),
			m.take(hf+"mlp.shared_experts."+w1+".weight").tensor(tt+"moe.shared_experts.w1.weight"),
			m.take(hf+"mlp.shared_experts."+w3+".weight").tensor(tt+"moe.shared_experts.w3.weight"),
			m.take(hf+"mlp.shared_experts.down_proj.weight").tensor(tt+"moe.shared_experts.w2.weight"),
			stackExperts(m, ep, "gate_proj", dsExperts, nil).tensor(tt+g.w1),
			stackExperts(m, ep, "up_proj", dsExperts, nil).tensor(tt+g.w3),
			stackExperts(m, ep, "down_proj", dsExperts, nil).tensor(tt+g.w2))
	}
	return m.done(out)
}

// hfLlama4 is the text model of an HF Llama 4 checkpoint
// (Llama4ForConditionalGeneration: language_model.model.*,
// language_model.lm_head.weight), every layer MoE with a shared expert and
// transformers' fused experts (Llama4TextExperts, modeling_llama4.py:
// gate_up_proj [E, D, 2F], down_proj [E, F, D]). Its config nests the
// text model's numbers in text_config.
func hfLlama4() *hfModel {
	m := &hfModel{}
	m.add("language_model.model.embed_tokens.weight", cvVocab, cvHidden)
	const e = 3
	for i := range cvLayers {
		p := fmt.Sprintf("language_model.model.layers.%d.", i)
		m.add(p+"input_layernorm.weight", cvHidden)
		m.add(p+"post_attention_layernorm.weight", cvHidden)
		m.attention(p, false, false)
		m.add(p+"feed_forward.router.weight", e, cvHidden)
		m.add(p+"feed_forward.experts.gate_up_proj", e, cvHidden, 2*cvMoEInter)
		m.add(p+"feed_forward.experts.down_proj", e, cvMoEInter, cvHidden)
		m.add(p+"feed_forward.shared_expert.gate_proj.weight", cvMoEInter, cvHidden)
		m.add(p+"feed_forward.shared_expert.up_proj.weight", cvMoEInter, cvHidden)
		m.add(p+"feed_forward.shared_expert.down_proj.weight", cvHidden, cvMoEInter)
	}
	m.add("language_model.model.norm.weight", cvHidden)
	m.add("language_model.lm_head.weight", cvVocab, cvHidden)
	m.setConfig("llama4_text", map[string]any{"num_local_experts": e})
	m.config = map[string]any{"model_type": "llama4", "tie_word_embeddings": false, "text_config": m.config}
	return m
}

// ttLlama4 is torchtitan's native Llama 4 by its from_hf
// (torchtitan/models/llama4/model/state_dict_adapter.py @ v0.2.2):
//
//	w1, w3 = value.chunk(2, dim=-1)
//	w1, w3 = w1.transpose(-1, -2), w3.transpose(-1, -2)
//	down_proj: value = value.transpose(-1, -2)   -> moe.experts.w2
//
// and the map's renames. reshape builds the classic broken export that
// reshapes where it should transpose.
func ttLlama4(m *hfModel, reshape bool) []fixture.Tensor {
	out := []fixture.Tensor{m.take("language_model.model.embed_tokens.weight").tensor("tok_embeddings.weight"),
		m.take("language_model.model.norm.weight").tensor("norm.weight"),
		m.take("language_model.lm_head.weight").tensor("output.weight")}
	tr := func(x nd) nd {
		if reshape {
			return x.view(x.shape[0], x.shape[2], x.shape[1])
		}
		return x.transpose(-1, -2)
	}
	for i := range cvLayers {
		hf, tt := fmt.Sprintf("language_model.model.layers.%d.", i), fmt.Sprintf("layers.%d.", i)
		w13 := m.take(hf+"feed_forward.experts.gate_up_proj").chunk(2, -1)
		out = append(out,
			m.take(hf+"self_attn.q_proj.weight").tensor(tt+"attention.wq.weight"),
			m.take(hf+"self_attn.k_proj.weight").tensor(tt+"attention.wk.weight"),
			m.take(hf+"self_attn.v_proj.weight").tensor(tt+"attention.wv.weight"),
			m.take(hf+"self_attn.o_proj.weight").tensor(tt+"attention.wo.weight"),
			m.take(hf+"input_layernorm.weight").tensor(tt+"attention_norm.weight"),
			m.take(hf+"post_attention_layernorm.weight").tensor(tt+"ffn_norm.weight"),
			m.take(hf+"feed_forward.router.weight").tensor(tt+"moe.router.gate.weight"),
			tr(w13[0]).tensor(tt+"moe.experts.w1"), tr(w13[1]).tensor(tt+"moe.experts.w3"),
			m.take(hf+"feed_forward.experts.down_proj").transpose(-1, -2).tensor(tt+"moe.experts.w2"),
			m.take(hf+"feed_forward.shared_expert.gate_proj.weight").tensor(tt+"moe.shared_experts.w1.weight"),
			m.take(hf+"feed_forward.shared_expert.up_proj.weight").tensor(tt+"moe.shared_experts.w3.weight"),
			m.take(hf+"feed_forward.shared_expert.down_proj.weight").tensor(tt+"moe.shared_experts.w2.weight"),
			generate([]int{3}, func([]int) float32 { return 0 }).tensor(tt+"moe.expert_bias"))
	}
	return m.done(out)
}

func TestTorchtitanMoEConventions(t *testing.T) {
	var dsExpertKeys []string
	for _, l := range []int{1, 2} {
		for _, p := range []string{"gate_proj", "up_proj"} {
			dsExpertKeys = append(dsExpertKeys, fmt.Sprintf("model.layers.%d.mlp.shared_experts.%s.weight", l, p))
		}
	}
	var llama4Keys []string
	for i := range cvLayers {
		llama4Keys = append(llama4Keys, fmt.Sprintf("language_model.model.layers.%d.feed_forward.experts.gate_up_proj", i))
	}
	runConventions(t, []convention{
		{
			name: "deepseek-v3, MLA with q_lora, MTP layer (main since 2026-08-11)",
			source: "pytorch/torchtitan torchtitan/models/deepseek_v3/state_dict_adapter.py @ b5bcd76c " +
				"(from_hf_map, _map_from_hf_layer_key; MTP since f59c215e)",
			model:   func() *hfModel { return hfDeepSeekV3(dsQLora, true) },
			export:  func(m *hfModel) []fixture.Tensor { return ttDeepSeekV3(m, ttG3, true, false) },
			adapter: "torchtitan-deepseek-v3",
			// torchtitan's map has no entry for MTP's copies of the
			// embedding and the head: no torchtitan export holds them.
			want:       []string{"error missing_key model.layers.2.embed_tokens.weight", "error missing_key model.layers.2.shared_head.head.weight"},
			uncompared: 2,
			broken:     func(m *hfModel) []fixture.Tensor { return ttDeepSeekV3(m, ttG3, true, true) },
			brokenKeys: dsExpertKeys,
		},
		{
			name:       "deepseek-v3, wq (q_lora_rank 0), v0.2.x names",
			source:     "pytorch/torchtitan torchtitan/models/deepseek_v3/model/state_dict_adapter.py @ v0.2.2",
			model:      func() *hfModel { return hfDeepSeekV3(0, false) },
			export:     func(m *hfModel) []fixture.Tensor { return ttDeepSeekV3(m, ttG1, false, false) },
			adapter:    "torchtitan-deepseek-v3",
			broken:     func(m *hfModel) []fixture.Tensor { return ttDeepSeekV3(m, ttG1, false, true) },
			brokenKeys: dsExpertKeys[:2],
		},
		{
			name:       "llama4, experts joined and transposed",
			source:     "pytorch/torchtitan torchtitan/models/llama4/model/state_dict_adapter.py @ v0.2.2 (removed from main in d92336fe)",
			model:      hfLlama4,
			export:     func(m *hfModel) []fixture.Tensor { return ttLlama4(m, false) },
			adapter:    "torchtitan-llama4",
			dropped:    cvLayers,
			broken:     func(m *hfModel) []fixture.Tensor { return ttLlama4(m, true) },
			brokenKeys: llama4Keys,
		},
	})
}
