package verify

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
)

// The transformers v5 conversions below are those of huggingface/transformers
// src/transformers/conversion_mapping.py (the late v5 copy, with
// _MODEL_TO_CONVERSION_PATTERN; the per-expert patterns are unchanged since
// 000c33fd), applied in from_pretrained: an export that kept the loaded
// model's state dict (save_original_format=False, a PEFT config loaded, or
// a writer that dumps model.state_dict()) holds them.

const v5Experts = 3

// hfMoE is an HF MoE model whose per-expert tensors sit under
// <block>.experts.e.<names> with the router at <block>.<router>:
// Mixtral's block_sparse_moe with w1/w3/w2 and gate.weight, Jamba's
// feed_forward with gate/up/down_proj and router.weight, LFM2-MoE's
// feed_forward with w1/w3/w2. bias adds MiniMax-M2's
// e_score_correction_bias.
func hfMoE(modelType, block, router string, names [3]string, bias bool) *hfModel {
	m := &hfModel{}
	m.add("model.embed_tokens.weight", cvVocab, cvHidden)
	for i := range cvLayers {
		p := fmt.Sprintf("model.layers.%d.", i)
		m.add(p+"input_layernorm.weight", cvHidden)
		m.add(p+"post_attention_layernorm.weight", cvHidden)
		m.attention(p, false, false)
		if router != "" {
			m.add(p+block+"."+router, v5Experts, cvHidden)
		}
		if bias {
			m.add(p+block+".e_score_correction_bias", v5Experts)
		}
		m.experts(p+block+".experts.", v5Experts, names)
	}
	m.add("model.norm.weight", cvHidden)
	m.add("lm_head.weight", cvVocab, cvHidden)
	m.setConfig(modelType, map[string]any{"num_local_experts": v5Experts})
	return m
}

// v5Fuse is WeightConverter([".experts.*.w1.weight", ".experts.*.w3.weight"],
// ".experts.gate_up_proj", [MergeModulelist(dim=0), Concatenate(dim=1)])
// and its down_proj sibling, MergeModulelist(dim=0): per layer, the
// experts under p (with the names of their gate, up and down) become
// gate_up_proj [E, 2I, H] and down_proj [E, H, I] under q. upFirst builds
// the broken export with up before gate.
func v5Fuse(m *hfModel, p, q string, names [3]string, upFirst bool) []fixture.Tensor {
	var out []fixture.Tensor
	for i := range cvLayers {
		ep := fmt.Sprintf("model.layers.%d.%s.experts.", i, p)
		gate := stackExperts(m, ep, names[0], v5Experts, nil)
		up := stackExperts(m, ep, names[1], v5Experts, nil)
		if upFirst {
			gate, up = up, gate
		}
		mp := fmt.Sprintf("model.layers.%d.%s.experts.", i, q)
		out = append(out, cat(1, gate, up).tensor(mp+"gate_up_proj"), stackExperts(m, ep, names[2], v5Experts, nil).tensor(mp+"down_proj"))
	}
	return out
}

// v5Rename applies WeightRenaming(source, target) to the remaining names.
func v5Rename(ts []fixture.Tensor, pairs ...string) []fixture.Tensor {
	for i := range ts {
		for j := 0; j < len(pairs); j += 2 {
			ts[i].Name = strings.ReplaceAll(ts[i].Name, pairs[j], pairs[j+1])
		}
	}
	return ts
}

// mixtralV5 is a Mixtral-family checkpoint as v5 holds it in memory:
// "mixtral" (and minimax, minimax_m2): WeightRenaming(".block_sparse_moe.",
// ".mlp."), then the fused experts; "phimoe" also WeightRenaming(".gate.weight",
// ".router.weight").
func mixtralV5(m *hfModel, phimoe, upFirst bool) []fixture.Tensor {
	out := v5Fuse(m, "block_sparse_moe", "mlp", [3]string{"w1", "w3", "w2"}, upFirst)
	rest := v5Rename(m.rest(), ".block_sparse_moe.", ".mlp.")
	if phimoe {
		rest = v5Rename(rest, ".gate.weight", ".router.weight")
	}
	return m.done(append(out, rest...))
}

// qwen3VLMoe is a Qwen3-VL-MoE checkpoint's text model: its experts are
// stored fused and transposed, gate_up_proj [E, H, 2I] and down_proj
// [E, I, H] (model.language_model.*).
func qwen3VLMoe() *hfModel {
	m := &hfModel{}
	m.add("model.language_model.embed_tokens.weight", cvVocab, cvHidden)
	for i := range cvLayers {
		p := fmt.Sprintf("model.language_model.layers.%d.", i)
		m.add(p+"input_layernorm.weight", cvHidden)
		m.add(p+"post_attention_layernorm.weight", cvHidden)
		m.attention(p, true, false)
		m.add(p+"mlp.gate.weight", v5Experts, cvHidden)
		m.add(p+"mlp.experts.gate_up_proj", v5Experts, cvHidden, 2*cvMoEInter)
		m.add(p+"mlp.experts.down_proj", v5Experts, cvMoEInter, cvHidden)
	}
	m.add("model.language_model.norm.weight", cvHidden)
	m.add("lm_head.weight", cvVocab, cvHidden)
	m.setConfig("qwen3_vl_moe_text", map[string]any{"num_experts": v5Experts})
	m.config = map[string]any{"model_type": "qwen3_vl_moe", "tie_word_embeddings": false, "text_config": m.config}
	return m
}

// qwen3VLMoeV5 is WeightConverter("mlp.experts.gate_up_proj", ...,
// [Transpose(1, 2, check_dims=True)]) and its down_proj sibling: the
// in-memory [E, 2I, H] and [E, H, I]. reshape builds the broken export
// that reshapes instead.
func qwen3VLMoeV5(m *hfModel, reshape bool) []fixture.Tensor {
	var out []fixture.Tensor
	for i := range cvLayers {
		for _, n := range []string{"gate_up_proj", "down_proj"} {
			name := fmt.Sprintf("model.language_model.layers.%d.mlp.experts.%s", i, n)
			x := m.take(name)
			y := x.transpose(1, 2)
			if reshape && n == "gate_up_proj" {
				y = x.view(x.shape[0], x.shape[2], x.shape[1])
			}
			out = append(out, y.tensor(name))
		}
	}
	return m.done(append(out, m.rest()...))
}

func TestTransformersV5Conventions(t *testing.T) {
	mixtralKeys := func(block string) []string {
		var out []string
		for i := range cvLayers {
			for e := range v5Experts {
				for _, n := range []string{"w1", "w3"} {
					out = append(out, fmt.Sprintf("model.layers.%d.%s.experts.%d.%s.weight", i, block, e, n))
				}
			}
		}
		return out
	}
	mixtral := [3]string{"w1", "w3", "w2"}
	hfNames := [3]string{"gate_proj", "up_proj", "down_proj"}
	var vlKeys []string
	for i := range cvLayers {
		vlKeys = append(vlKeys, fmt.Sprintf("model.language_model.layers.%d.mlp.experts.gate_up_proj", i))
	}
	runConventions(t, []convention{
		{
			name:       "mixtral",
			source:     "huggingface/transformers src/transformers/conversion_mapping.py \"mixtral\" (late v5)",
			model:      func() *hfModel { return hfMoE("mixtral", "block_sparse_moe", "gate.weight", mixtral, false) },
			export:     func(m *hfModel) []fixture.Tensor { return mixtralV5(m, false, false) },
			adapter:    "hf-v5-mixtral",
			broken:     func(m *hfModel) []fixture.Tensor { return mixtralV5(m, false, true) },
			brokenKeys: mixtralKeys("block_sparse_moe"),
		},
		{
			name:       "minimax_m2, with the score-correction bias",
			source:     "huggingface/transformers src/transformers/conversion_mapping.py \"minimax_m2\": \"mixtral\" (late v5)",
			model:      func() *hfModel { return hfMoE("minimax_m2", "block_sparse_moe", "gate.weight", mixtral, true) },
			export:     func(m *hfModel) []fixture.Tensor { return mixtralV5(m, false, false) },
			adapter:    "hf-v5-mixtral",
			broken:     func(m *hfModel) []fixture.Tensor { return mixtralV5(m, false, true) },
			brokenKeys: mixtralKeys("block_sparse_moe"),
		},
		{
			name:       "phimoe, router renamed",
			source:     "huggingface/transformers src/transformers/conversion_mapping.py \"phimoe\" (late v5)",
			model:      func() *hfModel { return hfMoE("phimoe", "block_sparse_moe", "gate.weight", mixtral, false) },
			export:     func(m *hfModel) []fixture.Tensor { return mixtralV5(m, true, false) },
			adapter:    "hf-v5-mixtral",
			broken:     func(m *hfModel) []fixture.Tensor { return mixtralV5(m, true, true) },
			brokenKeys: mixtralKeys("block_sparse_moe"),
		},
		{
			name:   "jamba",
			source: "huggingface/transformers src/transformers/conversion_mapping.py \"jamba\" (000c33fd and late v5)",
			model:  func() *hfModel { return hfMoE("jamba", "feed_forward", "router.weight", hfNames, false) },
			export: func(m *hfModel) []fixture.Tensor {
				return m.done(append(v5Fuse(m, "feed_forward", "feed_forward", hfNames, false), m.rest()...))
			},
			adapter: "hf-v5-jamba",
			broken: func(m *hfModel) []fixture.Tensor {
				return m.done(append(v5Fuse(m, "feed_forward", "feed_forward", hfNames, true), m.rest()...))
			},
			brokenKeys: jambaKeys("gate_proj", "up_proj"),
		},
		{
			name:   "lfm2_moe",
			source: "huggingface/transformers src/transformers/conversion_mapping.py \"lfm2_moe\" (000c33fd and late v5)",
			model:  func() *hfModel { return hfMoE("lfm2_moe", "feed_forward", "", mixtral, false) },
			export: func(m *hfModel) []fixture.Tensor {
				return m.done(append(v5Fuse(m, "feed_forward", "feed_forward", mixtral, false), m.rest()...))
			},
			adapter: "hf-v5-lfm2-moe",
			broken: func(m *hfModel) []fixture.Tensor {
				return m.done(append(v5Fuse(m, "feed_forward", "feed_forward", mixtral, true), m.rest()...))
			},
			brokenKeys: jambaKeys("w1", "w3"),
		},
		{
			name:   "qwen2_moe pattern (qwen3_moe)",
			source: "huggingface/transformers src/transformers/conversion_mapping.py \"qwen2_moe\" (000c33fd and late v5)",
			model:  func() *hfModel { return hfLlama("qwen3_moe", v5Experts) },
			export: func(m *hfModel) []fixture.Tensor {
				return m.done(append(v5Fuse(m, "mlp", "mlp", hfNames, false), m.rest()...))
			},
			adapter: "hf-v5-fused",
			broken: func(m *hfModel) []fixture.Tensor {
				return m.done(append(v5Fuse(m, "mlp", "mlp", hfNames, true), m.rest()...))
			},
			brokenKeys: expertKeys(v5Experts, "gate_proj", "up_proj"),
		},
		{
			name:       "qwen3_vl_moe, in-memory experts transposed from the stored layout",
			source:     "huggingface/transformers src/transformers/conversion_mapping.py \"qwen3_vl_moe\" Transpose(1, 2, check_dims=True) (after PR #44037)",
			model:      qwen3VLMoe,
			export:     func(m *hfModel) []fixture.Tensor { return qwen3VLMoeV5(m, false) },
			adapter:    "hf-v5-qwen3-vl-moe",
			broken:     func(m *hfModel) []fixture.Tensor { return qwen3VLMoeV5(m, true) },
			brokenKeys: vlKeys,
		},
	})
}

// jambaKeys lists the given projections of every expert under feed_forward.
func jambaKeys(projs ...string) []string {
	var out []string
	for i := range cvLayers {
		for e := range v5Experts {
			for _, p := range projs {
				out = append(out, fmt.Sprintf("model.layers.%d.feed_forward.experts.%d.%s.weight", i, e, p))
			}
		}
	}
	return out
}
