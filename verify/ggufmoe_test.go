package verify

import (
	"slices"
	"testing"

	"github.com/ckptcheck/ckptcheck/gguf"
	w "github.com/ckptcheck/ckptcheck/internal/ggufwrite"
)

// ggufZeros is an F32 tensor of zeros, dims in GGML order.
func ggufZeros(name string, dims ...uint64) w.Tensor {
	n := uint64(4)
	for _, d := range dims {
		n *= d
	}
	return w.Tensor{Name: name, Dims: dims, Type: uint32(gguf.TypeF32), Data: make([]byte, n)}
}

// MoE and MLA files as llama.cpp's converters write them pass the metadata
// checks; an expert_count their stacked experts do not hold, or more experts
// used than there are, is gguf_metadata_mismatch on each tensor kind.
func TestValidateGGUFExperts(t *testing.T) {
	const hidden, ff, experts = 16, 8, 4
	// moe is an MoE layer's tensors, GGML order (row-major reversed).
	moe := func(blk string, biases bool) []w.Tensor {
		ts := []w.Tensor{ggufZeros(blk+"ffn_gate_inp.weight", hidden, experts),
			ggufZeros(blk+"ffn_gate_exps.weight", hidden, ff, experts), ggufZeros(blk+"ffn_up_exps.weight", hidden, ff, experts),
			ggufZeros(blk+"ffn_down_exps.weight", ff, hidden, experts)}
		if biases { // gpt-oss
			ts = append(ts, ggufZeros(blk+"ffn_gate_exps.bias", ff, experts), ggufZeros(blk+"ffn_up_exps.bias", ff, experts),
				ggufZeros(blk+"ffn_down_exps.bias", hidden, experts), ggufZeros(blk+"ffn_gate_inp.bias", experts))
		}
		return ts
	}
	attention := func(blk string, heads, kvHeads, headDim uint64) []w.Tensor {
		return []w.Tensor{ggufZeros(blk+"attn_q.weight", hidden, heads*headDim), ggufZeros(blk+"attn_k.weight", hidden, kvHeads*headDim),
			ggufZeros(blk+"attn_v.weight", hidden, kvHeads*headDim), ggufZeros(blk+"attn_output.weight", heads*headDim, hidden)}
	}
	files := map[string]w.File{
		"qwen3moe": {KV: []w.KV{w.P("general.architecture", w.Str("qwen3moe")), w.P("qwen3moe.block_count", w.U32(1)),
			w.P("qwen3moe.embedding_length", w.U32(hidden)), w.P("qwen3moe.attention.head_count", w.U32(4)),
			w.P("qwen3moe.attention.head_count_kv", w.U32(2)), w.P("qwen3moe.attention.key_length", w.U32(4)),
			w.P("qwen3moe.expert_count", w.U32(experts)), w.P("qwen3moe.expert_used_count", w.U32(2))},
			Tensors: slices.Concat([]w.Tensor{ggufZeros("token_embd.weight", hidden, 10)}, attention("blk.0.", 4, 2, 4), moe("blk.0.", false))},
		// deepseek2: MLA written as MQA (one KV head of kv_lora_rank +
		// the RoPE dimensions), the first layer dense, the expert score
		// bias, a shared expert.
		"deepseek2": {KV: []w.KV{w.P("general.architecture", w.Str("deepseek2")), w.P("deepseek2.block_count", w.U32(2)),
			w.P("deepseek2.embedding_length", w.U32(hidden)), w.P("deepseek2.attention.head_count", w.U32(4)),
			w.P("deepseek2.attention.head_count_kv", w.U32(1)), w.P("deepseek2.attention.key_length", w.U32(24)),
			w.P("deepseek2.attention.value_length", w.U32(16)), w.P("deepseek2.attention.q_lora_rank", w.U32(12)),
			w.P("deepseek2.attention.kv_lora_rank", w.U32(16)), w.P("deepseek2.rope.dimension_count", w.U32(8)),
			w.P("deepseek2.leading_dense_block_count", w.U32(1)), w.P("deepseek2.expert_count", w.U32(experts)),
			w.P("deepseek2.expert_used_count", w.U32(2)), w.P("deepseek2.expert_shared_count", w.U32(1))},
			Tensors: slices.Concat([]w.Tensor{ggufZeros("token_embd.weight", hidden, 10)},
				[]w.Tensor{ggufZeros("blk.0.attn_q_a.weight", hidden, 12), ggufZeros("blk.0.attn_q_b.weight", 12, 4*16),
					ggufZeros("blk.0.attn_kv_a_mqa.weight", hidden, 16+8), ggufZeros("blk.0.attn_k_b.weight", 8, 16, 4),
					ggufZeros("blk.0.attn_v_b.weight", 16, 8, 4), ggufZeros("blk.0.attn_output.weight", 4*8, hidden),
					ggufZeros("blk.0.ffn_gate.weight", hidden, 24), ggufZeros("blk.0.ffn_up.weight", hidden, 24), ggufZeros("blk.0.ffn_down.weight", 24, hidden)},
				[]w.Tensor{ggufZeros("blk.1.attn_q_a.weight", hidden, 12), ggufZeros("blk.1.attn_q_b.weight", 12, 4*16),
					ggufZeros("blk.1.attn_kv_a_mqa.weight", hidden, 16+8), ggufZeros("blk.1.attn_output.weight", 4*8, hidden),
					ggufZeros("blk.1.exp_probs_b.bias", experts), ggufZeros("blk.1.ffn_gate_shexp.weight", hidden, ff)},
				moe("blk.1.", false))},
		"gpt-oss": {KV: []w.KV{w.P("general.architecture", w.Str("gpt-oss")), w.P("gpt-oss.block_count", w.U32(1)),
			w.P("gpt-oss.embedding_length", w.U32(hidden)), w.P("gpt-oss.attention.head_count", w.U32(4)),
			w.P("gpt-oss.expert_count", w.U32(experts)), w.P("gpt-oss.expert_used_count", w.U32(2))},
			Tensors: slices.Concat([]w.Tensor{ggufZeros("token_embd.weight", hidden, 10)}, attention("blk.0.", 4, 1, 4), moe("blk.0.", true))},
		// Mixtral as llama.cpp wrote it before stacking: one tensor an
		// expert, nothing stacked to check.
		"legacy mixtral": {KV: []w.KV{w.P("general.architecture", w.Str("llama")), w.P("llama.block_count", w.U32(1)),
			w.P("llama.embedding_length", w.U32(hidden)), w.P("llama.attention.head_count", w.U32(4)),
			w.P("llama.attention.head_count_kv", w.U32(2)), w.P("llama.expert_count", w.U32(2)), w.P("llama.expert_used_count", w.U32(2))},
			Tensors: slices.Concat([]w.Tensor{ggufZeros("token_embd.weight", hidden, 10)}, attention("blk.0.", 4, 2, 4),
				[]w.Tensor{ggufZeros("blk.0.ffn_gate_inp.weight", hidden, 2), ggufZeros("blk.0.ffn_gate.0.weight", hidden, ff), ggufZeros("blk.0.ffn_gate.1.weight", hidden, ff)})},
	}
	stacked := []string{"blk.0.ffn_gate_inp.weight", "blk.0.ffn_gate_exps.weight", "blk.0.ffn_up_exps.weight", "blk.0.ffn_down_exps.weight"}
	for _, tt := range []struct {
		name, file string
		kv         []w.KV
		keys       []string
	}{
		{name: "qwen3moe", file: "qwen3moe"},
		{name: "qwen3moe expert_count", file: "qwen3moe", kv: []w.KV{w.P("qwen3moe.expert_count", w.U32(8))}, keys: stacked},
		{name: "qwen3moe expert_used_count", file: "qwen3moe", kv: []w.KV{w.P("qwen3moe.expert_used_count", w.U32(5))}, keys: []string{""}},
		{name: "deepseek2 MLA", file: "deepseek2"},
		{name: "deepseek2 expert_count", file: "deepseek2", kv: []w.KV{w.P("deepseek2.expert_count", w.U32(2))},
			keys: []string{"blk.1.ffn_gate_inp.weight", "blk.1.ffn_gate_exps.weight", "blk.1.ffn_up_exps.weight", "blk.1.ffn_down_exps.weight", "blk.1.exp_probs_b.bias"}},
		{name: "gpt-oss", file: "gpt-oss"},
		{name: "gpt-oss expert_count", file: "gpt-oss", kv: []w.KV{w.P("gpt-oss.expert_count", w.U32(3))},
			keys: append(slices.Clone(stacked), "blk.0.ffn_gate_exps.bias", "blk.0.ffn_up_exps.bias", "blk.0.ffn_down_exps.bias", "blk.0.ffn_gate_inp.bias")},
		{name: "legacy mixtral", file: "legacy mixtral"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := files[tt.file]
			f.KV = slices.Clone(f.KV)
			for _, o := range tt.kv {
				f.KV[slices.IndexFunc(f.KV, func(kv w.KV) bool { return kv.Key == o.Key })] = o
			}
			var keys []string
			for _, fd := range validatePath(t, writeGGUF(t, f)) {
				if fd.Code != CodeGGUFMetadataMismatch {
					t.Errorf("finding %+v", fd)
				}
				keys = append(keys, fd.Key)
			}
			if !slices.Equal(keys, tt.keys) {
				t.Errorf("findings on %q, want %q", keys, tt.keys)
			}
		})
	}
}
