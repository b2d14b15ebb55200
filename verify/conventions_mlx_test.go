package verify

import (
	"fmt"
	"testing"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
)

// mlx-lm's saved models are utils.save_model of the parameters its
// sanitize() made from the HF weights (ml-explore/mlx-lm @ d78bf58e,
// 2026-08-22).

// mlxStack is sanitize's expert stacking, as models/qwen3_moe.py writes it
// (qwen2_moe, olmoe, glm4_moe alike; mixtral and lfm2_moe with their names):
//
//	to_join = [weights.pop(f"{prefix}.mlp.experts.{e}.{n}.weight") for e in range(num_experts)]
//	weights[f"{prefix}.mlp.switch_mlp.{n}.weight"] = mx.stack(to_join)
//
// block is the experts' parent (mlp, block_sparse_moe, feed_forward), from
// the HF names and to mlx's; gateOrder, when set, is the broken export's
// order of the gate experts.
func mlxStack(m *hfModel, block string, from, to [3]string, n int, gateOrder []int) []fixture.Tensor {
	var out []fixture.Tensor
	for i := range cvLayers {
		ep := fmt.Sprintf("model.layers.%d.%s.experts.", i, block)
		for k := range 3 {
			var order []int
			if k == 0 {
				order = gateOrder
			}
			out = append(out, stackExperts(m, ep, from[k], n, order).tensor(fmt.Sprintf("model.layers.%d.%s.switch_mlp.%s.weight", i, block, to[k])))
		}
	}
	return m.done(append(out, m.rest()...)) // the rest keep their names
}

// hfLFM2 is an HF LFM2 model (transformers models/lfm2/modeling_lfm2.py):
// layer 0 a short convolution, conv.conv.weight [H, 1, L] (nn.Conv1d with
// groups=H), conv.in_proj [3H, H], conv.out_proj; layer 1 attention with
// q_layernorm/k_layernorm; feed_forward w1/w3/w2; embedding_norm.
func hfLFM2() *hfModel {
	const kernel = 3
	m := &hfModel{}
	m.add("model.embed_tokens.weight", cvVocab, cvHidden)
	for i := range cvLayers {
		p := fmt.Sprintf("model.layers.%d.", i)
		m.add(p+"operator_norm.weight", cvHidden)
		m.add(p+"ffn_norm.weight", cvHidden)
		if i == 0 {
			m.add(p+"conv.conv.weight", cvHidden, 1, kernel)
			m.add(p+"conv.in_proj.weight", 3*cvHidden, cvHidden)
			m.add(p+"conv.out_proj.weight", cvHidden, cvHidden)
		} else {
			m.add(p+"self_attn.q_proj.weight", cvHeads*cvHeadDim, cvHidden)
			m.add(p+"self_attn.k_proj.weight", cvKV*cvHeadDim, cvHidden)
			m.add(p+"self_attn.v_proj.weight", cvKV*cvHeadDim, cvHidden)
			m.add(p+"self_attn.out_proj.weight", cvHidden, cvHeads*cvHeadDim)
			m.add(p+"self_attn.q_layernorm.weight", cvHeadDim)
			m.add(p+"self_attn.k_layernorm.weight", cvHeadDim)
		}
		m.add(p+"feed_forward.w1.weight", cvInter, cvHidden)
		m.add(p+"feed_forward.w3.weight", cvInter, cvHidden)
		m.add(p+"feed_forward.w2.weight", cvHidden, cvInter)
	}
	m.add("model.embedding_norm.weight", cvHidden)
	m.setConfig("lfm2", map[string]any{"tie_word_embeddings": true})
	return m
}

// mlxLFM2 is models/lfm2.py sanitize:
//
//	if "conv.weight" in name:
//	    if param.shape[-1] > param.shape[1]:
//	        param = param.transpose(0, 2, 1)
//
// flip builds the broken export with the kernel taps reversed.
func mlxLFM2(m *hfModel, flip bool) []fixture.Tensor {
	w := m.take("model.layers.0.conv.conv.weight")
	if flip {
		w = generate(w.shape, func(idx []int) float32 { return w.at([]int{idx[0], idx[1], w.shape[2] - 1 - idx[2]}) })
	}
	return m.done(append([]fixture.Tensor{w.transpose(1, 2).tensor("model.layers.0.conv.conv.weight")}, m.rest()...))
}

func TestConventionsMLX(t *testing.T) {
	hfNames := [3]string{"gate_proj", "up_proj", "down_proj"}
	mixtral := [3]string{"w1", "w3", "w2"}
	reversed := []int{2, 1, 0}
	var brokenGates []string
	for i := range cvLayers {
		for _, e := range []int{0, 2} {
			brokenGates = append(brokenGates, fmt.Sprintf("model.layers.%d.mlp.experts.%d.gate_proj.weight", i, e))
		}
	}
	runConventions(t, []convention{
		{
			name:       "qwen3_moe switch_mlp",
			source:     "ml-explore/mlx-lm mlx_lm/models/qwen3_moe.py sanitize @ d78bf58e",
			model:      func() *hfModel { return hfLlama("qwen3_moe", 3) },
			export:     func(m *hfModel) []fixture.Tensor { return mlxStack(m, "mlp", hfNames, hfNames, 3, nil) },
			adapter:    "mlx-lm",
			broken:     func(m *hfModel) []fixture.Tensor { return mlxStack(m, "mlp", hfNames, hfNames, 3, reversed) },
			brokenKeys: brokenGates,
		},
		{
			name:   "mixtral block_sparse_moe.switch_mlp",
			source: "ml-explore/mlx-lm mlx_lm/models/mixtral.py sanitize @ d78bf58e",
			model:  func() *hfModel { return hfMoE("mixtral", "block_sparse_moe", "gate.weight", mixtral, false) },
			export: func(m *hfModel) []fixture.Tensor {
				return mlxStack(m, "block_sparse_moe", mixtral, hfNames, v5Experts, nil)
			},
			adapter: "mlx-lm",
			broken: func(m *hfModel) []fixture.Tensor {
				return mlxStack(m, "block_sparse_moe", mixtral, hfNames, v5Experts, reversed)
			},
			brokenKeys: []string{"model.layers.0.block_sparse_moe.experts.0.w1.weight", "model.layers.0.block_sparse_moe.experts.2.w1.weight",
				"model.layers.1.block_sparse_moe.experts.0.w1.weight", "model.layers.1.block_sparse_moe.experts.2.w1.weight"},
		},
		{
			name:       "lfm2 conv [C, K, 1]",
			source:     "ml-explore/mlx-lm mlx_lm/models/lfm2.py sanitize @ d78bf58e",
			model:      hfLFM2,
			export:     func(m *hfModel) []fixture.Tensor { return mlxLFM2(m, false) },
			adapter:    "mlx-lm",
			broken:     func(m *hfModel) []fixture.Tensor { return mlxLFM2(m, true) },
			brokenKeys: []string{"model.layers.0.conv.conv.weight"},
		},
	})
}
