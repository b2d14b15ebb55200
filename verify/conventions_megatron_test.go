package verify

import (
	"fmt"
	"testing"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
)

// mgOpts say which Megatron-Core state dict megatronOf builds.
type mgOpts struct {
	local      bool   // local spec: input_layernorm and pre_mlp_layernorm, no fused norms
	experts    string // "grouped" (TEGroupedMLP weight{e}) or "sequential" (local_experts.{e})
	halves     bool   // linear_fc1 saved as weight_w (gate) and weight_v (up)
	mtp        bool   // one multi-token-prediction layer, which HF Qwen has no place for
	plainBias  bool   // broken: the QKV bias concatenated q, k, v, not per group
	upFirst    bool   // broken: linear_fc1 as [up; gate]
	swapHalves bool   // broken: weight_w and weight_v swapped
}

// mergeQKV is Megatron-Bridge's merge_qkv_weights and merge_qkv_biases
// (NVIDIA-NeMo/Megatron-Bridge src/megatron/bridge/models/conversion/
// param_mapping.py @ 067f987d), "Interleave in Megatron pattern: [q1...qn,
// k1, v1, q1...qn, k2, v2, ...]":
//
//	q_reshaped = q.view(head_num, q_head_size, hidden_size)   (1-D for biases)
//	for i in range(num_query_groups):
//	    qkv_weights.extend([q_reshaped[i*heads_per_group:(i+1)*heads_per_group], k_reshaped[i:i+1], v_reshaped[i:i+1]])
//	qkv = torch.cat(qkv_weights, dim=0); return qkv.reshape([-1, hidden_size])
func mergeQKV(q, k, v nd) nd {
	inner := q.shape[1:]
	qr := q.view(append([]int{cvHeads, cvHeadDim}, inner...)...)
	kr := k.view(append([]int{cvKV, cvHeadDim}, inner...)...)
	vr := v.view(append([]int{cvKV, cvHeadDim}, inner...)...)
	hpg := cvHeads / cvKV
	var parts []nd
	for i := range cvKV {
		parts = append(parts, qr.narrow(0, i*hpg, hpg), kr.narrow(0, i, 1), vr.narrow(0, i, 1))
	}
	qkv := cat(0, parts...)
	return qkv.view(append([]int{-1}, inner...)...)
}

// megatronOf converts an HF Llama-layout model (hfLlama) to Megatron-Core
// names, as Megatron-Bridge's mappings and Megatron-LM's layer specs name
// them (megatron/core/models/gpt/gpt_layer_specs.py, transformer/mlp.py
// apply_swiglu_sharded_factory, transformer/moe/experts.py @ d98e8a64):
// GatedMLPMapping's torch.cat([gate, up], dim=0); with singleton_local_shards
// "tensor_w, tensor_v = torch.chunk(t, 2, dim=swiglu_shard_axis)" saved
// as f'{key}_w' and f'{key}_v'.
func megatronOf(m *hfModel, n int, o mgOpts) []fixture.Tensor {
	out := []fixture.Tensor{m.take("model.embed_tokens.weight").tensor("embedding.word_embeddings.weight"),
		m.take("model.norm.weight").tensor("decoder.final_layernorm.weight"),
		m.take("lm_head.weight").tensor("output_layer.weight")}
	fc1 := func(name string, gate, up nd) []fixture.Tensor {
		if o.upFirst {
			gate, up = up, gate
		}
		if !o.halves {
			return []fixture.Tensor{cat(0, gate, up).tensor(name)}
		}
		h := cat(0, gate, up).chunk(2, 0)
		if o.swapHalves {
			h[0], h[1] = h[1], h[0]
		}
		return []fixture.Tensor{h[0].tensor(name + "_w"), h[1].tensor(name + "_v")}
	}
	for i := range cvLayers {
		hf, mg := fmt.Sprintf("model.layers.%d.", i), fmt.Sprintf("decoder.layers.%d.", i)
		q, k, v := m.take(hf+"self_attn.q_proj.weight"), m.take(hf+"self_attn.k_proj.weight"), m.take(hf+"self_attn.v_proj.weight")
		out = append(out, mergeQKV(q, k, v).tensor(mg+"self_attention.linear_qkv.weight"),
			m.take(hf+"self_attn.o_proj.weight").tensor(mg+"self_attention.linear_proj.weight"))
		if _, ok := m.t[hf+"self_attn.q_proj.bias"]; ok {
			qb, kb, vb := m.take(hf+"self_attn.q_proj.bias"), m.take(hf+"self_attn.k_proj.bias"), m.take(hf+"self_attn.v_proj.bias")
			bias := mergeQKV(qb, kb, vb)
			if o.plainBias {
				bias = cat(0, qb, kb, vb)
			}
			out = append(out, bias.tensor(mg+"self_attention.linear_qkv.bias"))
		}
		if _, ok := m.t[hf+"self_attn.q_norm.weight"]; ok {
			out = append(out, m.take(hf+"self_attn.q_norm.weight").tensor(mg+"self_attention.q_layernorm.weight"),
				m.take(hf+"self_attn.k_norm.weight").tensor(mg+"self_attention.k_layernorm.weight"))
		}
		in, post := mg+"self_attention.linear_qkv.layer_norm_weight", mg+"mlp.linear_fc1.layer_norm_weight"
		if o.local {
			in, post = mg+"input_layernorm.weight", mg+"pre_mlp_layernorm.weight"
		} else if n > 0 {
			post = mg + "pre_mlp_layernorm.weight" // MoE layers keep it in the TE spec too
		}
		out = append(out, m.take(hf+"input_layernorm.weight").tensor(in), m.take(hf+"post_attention_layernorm.weight").tensor(post))
		if n == 0 {
			out = append(out, fc1(mg+"mlp.linear_fc1.weight", m.take(hf+"mlp.gate_proj.weight"), m.take(hf+"mlp.up_proj.weight"))...)
			out = append(out, m.take(hf+"mlp.down_proj.weight").tensor(mg+"mlp.linear_fc2.weight"))
			continue
		}
		out = append(out, m.take(hf+"mlp.gate.weight").tensor(mg+"mlp.router.weight"))
		for e := range n {
			ep := fmt.Sprintf("%smlp.experts.%d.", hf, e)
			gate, up, down := m.take(ep+"gate_proj.weight"), m.take(ep+"up_proj.weight"), m.take(ep+"down_proj.weight")
			if o.experts == "grouped" { // TEGroupedMLP: GroupedLinear's weight{idx}
				out = append(out, fc1(fmt.Sprintf("%smlp.experts.linear_fc1.weight%d", mg, e), gate, up)...)
				out = append(out, down.tensor(fmt.Sprintf("%smlp.experts.linear_fc2.weight%d", mg, e)))
			} else { // SequentialMLP
				out = append(out, fc1(fmt.Sprintf("%smlp.experts.local_experts.%d.linear_fc1.weight", mg, e), gate, up)...)
				out = append(out, down.tensor(fmt.Sprintf("%smlp.experts.local_experts.%d.linear_fc2.weight", mg, e)))
			}
		}
	}
	if o.mtp { // megatron/core/transformer/multi_token_prediction.py (mtp_model_layer since 9d71cb1c)
		for _, s := range []string{"enorm.weight", "hnorm.weight", "final_layernorm.weight", "mtp_model_layer.input_layernorm.weight"} {
			out = append(out, generate([]int{cvHidden}, func([]int) float32 { return 1 }).tensor("mtp.layers.0."+s))
		}
		out = append(out, generate([]int{cvHidden, 2 * cvHidden}, func([]int) float32 { return 1 }).tensor("mtp.layers.0.eh_proj.weight"))
	}
	return m.done(out)
}

func TestMegatronConventions(t *testing.T) {
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
			name:       "TE spec, Qwen2 with a QKV bias grouped like the weight",
			source:     "NVIDIA-NeMo/Megatron-Bridge src/megatron/bridge/models/qwen/qwen2_bridge.py, conversion/param_mapping.py merge_qkv_biases @ 067f987d",
			model:      func() *hfModel { return hfLlama("qwen2", 0) },
			export:     func(m *hfModel) []fixture.Tensor { return megatronOf(m, 0, mgOpts{}) },
			adapter:    "megatron",
			broken:     func(m *hfModel) []fixture.Tensor { return megatronOf(m, 0, mgOpts{plainBias: true}) },
			brokenKeys: perLayer("self_attn.q_proj.bias", "self_attn.k_proj.bias", "self_attn.v_proj.bias"),
		},
		{
			name:    "local spec, Llama, linear_fc1 saved as weight_w and weight_v",
			source:  "NVIDIA/Megatron-LM megatron/core/models/gpt/gpt_layer_specs.py (local spec), transformer/mlp.py apply_swiglu_sharded_factory @ d98e8a64",
			model:   func() *hfModel { return hfLlama("llama", 0) },
			export:  func(m *hfModel) []fixture.Tensor { return megatronOf(m, 0, mgOpts{local: true, halves: true}) },
			adapter: "megatron",
			broken: func(m *hfModel) []fixture.Tensor {
				return megatronOf(m, 0, mgOpts{local: true, halves: true, swapHalves: true})
			},
			brokenKeys: perLayer("mlp.gate_proj.weight", "mlp.up_proj.weight"),
		},
		{
			name: "TE spec, Qwen3-MoE, TEGroupedMLP experts, an MTP layer",
			source: "NVIDIA-NeMo/Megatron-Bridge src/megatron/bridge/models/qwen/qwen3_moe_bridge.py @ 067f987d; " +
				"NVIDIA/Megatron-LM megatron/core/transformer/moe/experts.py, multi_token_prediction.py @ d98e8a64",
			model:   func() *hfModel { return hfLlama("qwen3_moe", 3) },
			export:  func(m *hfModel) []fixture.Tensor { return megatronOf(m, 3, mgOpts{experts: "grouped", mtp: true}) },
			adapter: "megatron",
			dropped: 5,
			broken: func(m *hfModel) []fixture.Tensor {
				return megatronOf(m, 3, mgOpts{experts: "grouped", mtp: true, upFirst: true})
			},
			brokenKeys: expertKeys(3, "gate_proj", "up_proj"),
		},
		{
			name:   "local spec, Qwen3-MoE, SequentialMLP experts with weight_w and weight_v",
			source: "NVIDIA-NeMo/Megatron-Bridge src/megatron/bridge/models/qwen/qwen3_moe_bridge.py (SequentialMLP) @ 067f987d",
			model:  func() *hfModel { return hfLlama("qwen3_moe", 3) },
			export: func(m *hfModel) []fixture.Tensor {
				return megatronOf(m, 3, mgOpts{local: true, experts: "sequential", halves: true})
			},
			adapter: "megatron",
			broken: func(m *hfModel) []fixture.Tensor {
				return megatronOf(m, 3, mgOpts{local: true, experts: "sequential", halves: true, swapHalves: true})
			},
			brokenKeys: expertKeys(3, "gate_proj", "up_proj"),
		},
	})
}
