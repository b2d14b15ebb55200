package adapter

import (
	"slices"
	"testing"

	"github.com/ckptcheck/ckptcheck/safetensors"
)

// ggufLayer is one layer of GGUF names with HF row-major shapes (the gguf
// reader reverses GGML's dimensions): q has 2 heads of 4 rows, k 1 head.
func ggufLayer(extra ...safetensors.TensorInfo) []safetensors.TensorInfo {
	in := []safetensors.TensorInfo{
		f32("token_embd.weight", 0, 10, 2), f32("output_norm.weight", 80, 2), f32("output.weight", 88, 10, 2),
		f32("blk.0.attn_q.weight", 1000, 8, 2), f32("blk.0.attn_k.weight", 2000, 4, 2), f32("blk.0.attn_v.weight", 3000, 4, 2),
		f32("blk.0.attn_output.weight", 4000, 2, 8), f32("blk.0.attn_norm.weight", 5000, 2), f32("blk.0.ffn_norm.weight", 5100, 2),
		f32("blk.0.ffn_gate.weight", 6000, 3, 2), f32("blk.0.ffn_up.weight", 7000, 3, 2), f32("blk.0.ffn_down.weight", 8000, 2, 3),
	}
	return append(in, extra...)
}

var hfLayer = []string{"lm_head.weight", "model.embed_tokens.weight", "model.layers.0.input_layernorm.weight",
	"model.layers.0.mlp.down_proj.weight", "model.layers.0.mlp.gate_proj.weight", "model.layers.0.mlp.up_proj.weight",
	"model.layers.0.post_attention_layernorm.weight", "model.layers.0.self_attn.k_proj.weight",
	"model.layers.0.self_attn.o_proj.weight", "model.layers.0.self_attn.q_proj.weight",
	"model.layers.0.self_attn.v_proj.weight", "model.norm.weight"}

func TestGGUFPresets(t *testing.T) {
	env := Env{"num_attention_heads": 2, "num_key_value_heads": 1}
	tests := []struct {
		preset   string
		extra    []safetensors.TensorInfo
		wantMore []string
		qRows    []uint64 // the GGUF rows of q that HF's rows 0..7 read
		dropped  int
	}{
		// convert_hf_to_gguf permutes Llama q/k per head: HF row h·4 + j·2 + r
		// is GGUF row h·4 + r·2 + j.
		{"gguf-llama", []safetensors.TensorInfo{f32("rope_freqs.weight", 9000, 1)}, nil, []uint64{0, 2, 1, 3, 4, 6, 5, 7}, 1},
		{"gguf-qwen", []safetensors.TensorInfo{f32("blk.0.attn_q.bias", 9000, 8), f32("blk.0.attn_q_norm.weight", 9100, 4)},
			[]string{"model.layers.0.self_attn.q_norm.weight", "model.layers.0.self_attn.q_proj.bias"}, []uint64{0, 1, 2, 3, 4, 5, 6, 7}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.preset, func(t *testing.T) {
			in := ggufLayer(tt.extra...)
			v := Chain{preset(tt.preset)}.Apply(in, env)
			if len(v.Errors) > 0 || len(v.Dropped) != tt.dropped {
				t.Fatalf("errors %v, dropped %v", v.Errors, v.Dropped)
			}
			got := names(v)
			slices.Sort(got)
			want := append(slices.Clone(hfLayer), tt.wantMore...)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("names %v, want %v", got, want)
			}
			q := v.Tensors[v.Index("model.layers.0.self_attn.q_proj.weight")]
			var rows []uint64
			for _, s := range q.Segments {
				for off := s.Offset; off < s.Offset+s.Length; off += 8 { // 8-byte rows
					rows = append(rows, off/8) // offsets within the tensor
				}
			}
			if !slices.Equal(rows, tt.qRows) || !slices.Equal(q.Shape, []uint64{8, 2}) {
				t.Errorf("q_proj reads GGUF rows %v (shape %v), want %v", rows, q.Shape, tt.qRows)
			}
		})
	}
}
