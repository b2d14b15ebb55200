package adapter

import (
	"slices"
	"strings"
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

// TestGGUFPresetsMore: the Gemma, Qwen-MoE, Phi-3, DeepSeek-V2 and gpt-oss
// presets map llama.cpp's names to HF's, Gemma's norms shifted back by -1,
// MoE stacks unstacked.
func TestGGUFPresetsMore(t *testing.T) {
	tests := []struct {
		preset string
		in     []safetensors.TensorInfo
		want   map[string]float64 // HF name → Add
	}{
		{"gguf-gemma", []safetensors.TensorInfo{f32("token_embd.weight", 0, 4, 2), f32("output_norm.weight", 32, 2),
			f32("blk.0.attn_norm.weight", 40, 2), f32("blk.0.ffn_norm.weight", 48, 2), f32("blk.0.attn_q.weight", 56, 2, 2)},
			map[string]float64{"model.embed_tokens.weight": 0, "model.norm.weight": -1, "model.layers.0.input_layernorm.weight": -1,
				"model.layers.0.post_attention_layernorm.weight": -1, "model.layers.0.self_attn.q_proj.weight": 0}},
		{"gguf-gemma2", []safetensors.TensorInfo{f32("blk.1.post_attention_norm.weight", 0, 2), f32("blk.1.ffn_norm.weight", 8, 2),
			f32("blk.1.post_ffw_norm.weight", 16, 2), f32("blk.1.attn_q_norm.weight", 24, 2), f32("blk.1.ffn_down.weight", 32, 2, 2)},
			map[string]float64{"model.layers.1.post_attention_layernorm.weight": -1, "model.layers.1.pre_feedforward_layernorm.weight": -1,
				"model.layers.1.post_feedforward_layernorm.weight": -1, "model.layers.1.self_attn.q_norm.weight": -1,
				"model.layers.1.mlp.down_proj.weight": 0}},
		{"gguf-qwen3moe", []safetensors.TensorInfo{f32("blk.0.ffn_gate_exps.weight", 0, 2, 3, 2), f32("blk.0.ffn_down_exps.weight", 48, 2, 2, 3),
			f32("blk.0.ffn_gate_inp.weight", 96, 2, 2)},
			map[string]float64{"model.layers.0.mlp.experts.0.gate_proj.weight": 0, "model.layers.0.mlp.experts.1.gate_proj.weight": 0,
				"model.layers.0.mlp.experts.0.down_proj.weight": 0, "model.layers.0.mlp.experts.1.down_proj.weight": 0,
				"model.layers.0.mlp.gate.weight": 0}},
		{"gguf-phi3", []safetensors.TensorInfo{f32("blk.0.attn_qkv.weight", 0, 6, 2), f32("blk.0.ffn_up.weight", 48, 4, 2),
			f32("rope_factors_long.weight", 80, 1)},
			map[string]float64{"model.layers.0.self_attn.qkv_proj.weight": 0, "model.layers.0.mlp.gate_up_proj.weight": 0}},
		{"gguf-gemma3", []safetensors.TensorInfo{f32("token_embd.weight", 0, 4, 2), f32("blk.0.post_ffw_norm.weight", 32, 2),
			f32("blk.0.attn_k_norm.weight", 40, 2), f32("blk.0.ffn_up.weight", 48, 2, 2)},
			map[string]float64{"language_model.model.embed_tokens.weight": 0, "language_model.model.layers.0.post_feedforward_layernorm.weight": -1,
				"language_model.model.layers.0.self_attn.k_norm.weight": -1, "language_model.model.layers.0.mlp.up_proj.weight": 0}},
		{"gguf-deepseek2", []safetensors.TensorInfo{f32("blk.0.attn_q_a.weight", 0, 2, 4), f32("blk.0.attn_q_a_norm.weight", 32, 2),
			f32("blk.0.attn_kv_a_mqa.weight", 40, 3, 4), f32("blk.1.attn_q.weight", 88, 4, 4), f32("blk.1.exp_probs_b.bias", 152, 2),
			f32("blk.1.ffn_up_exps.weight", 160, 2, 3, 2), f32("blk.1.ffn_up_shexp.weight", 208, 3, 2), f32("blk.0.ffn_up.weight", 232, 3, 2)},
			map[string]float64{"model.layers.0.self_attn.q_a_proj.weight": 0, "model.layers.0.self_attn.q_a_layernorm.weight": 0,
				"model.layers.0.self_attn.kv_a_proj_with_mqa.weight": 0, "model.layers.1.self_attn.q_proj.weight": 0,
				"model.layers.1.mlp.gate.e_score_correction_bias": 0, "model.layers.1.mlp.experts.0.up_proj.weight": 0,
				"model.layers.1.mlp.experts.1.up_proj.weight": 0, "model.layers.1.mlp.shared_experts.up_proj.weight": 0,
				"model.layers.0.mlp.up_proj.weight": 0}},
		{"gguf-gpt-oss", []safetensors.TensorInfo{f32("blk.0.attn_sinks.weight", 0, 2), f32("blk.0.post_attention_norm.weight", 8, 2),
			f32("blk.0.ffn_gate_inp.weight", 16, 2, 2), f32("blk.0.ffn_gate_inp.bias", 32, 2), f32("blk.0.ffn_down_exps.bias", 40, 2, 2),
			f32("blk.0.attn_q.bias", 56, 2)},
			map[string]float64{"model.layers.0.self_attn.sinks": 0, "model.layers.0.post_attention_layernorm.weight": 0,
				"model.layers.0.mlp.router.weight": 0, "model.layers.0.mlp.router.bias": 0,
				"model.layers.0.mlp.experts.down_proj_bias": 0, "model.layers.0.self_attn.q_proj.bias": 0}},
	}
	for _, tt := range tests {
		t.Run(tt.preset, func(t *testing.T) {
			v := Chain{preset(tt.preset)}.Apply(tt.in, Env{})
			if len(v.Errors) > 0 || len(v.Tensors) != len(tt.want) {
				t.Fatalf("names %v, errors %v", names(v), v.Errors)
			}
			for name, add := range tt.want {
				if x, ok := v.Tensor(name); !ok || x.Add != add {
					t.Errorf("%s: %+v, want add %v", name, x, add)
				}
			}
		})
	}
	// The second expert of a [2, 3, 2] F32 stack is its second 24 bytes.
	v := Chain{preset("gguf-qwen3moe")}.Apply(tests[2].in, Env{})
	if x, _ := v.Tensor("model.layers.0.mlp.experts.1.gate_proj.weight"); !slices.Equal(x.Segments, []Segment{{Source: 0, Offset: 24, Length: 24}}) ||
		!slices.Equal(x.Shape, []uint64{3, 2}) {
		t.Errorf("expert 1: %+v", x)
	}
}

// TestGGUFPresetDeepSeekKVB: DeepSeek's kv_b_proj [H·(nope+v), rank],
// which llama.cpp splits per head into attn_k_b [H, rank, nope] (the key
// rows transposed) and attn_v_b [H, v, rank], is joined back head by head,
// each head's key rows a tile read transposed, when both halves are plain;
// when either is in a GGML block type (a U8 tensor of rows of blocks
// here) both are dropped with the reason. A GGUF of before the split
// (attn_kv_b) maps it whole.
func TestGGUFPresetDeepSeekKVB(t *testing.T) {
	u8 := func(name string, off uint64, shape ...uint64) safetensors.TensorInfo {
		ti := f32(name, off, shape...)
		ti.DType, ti.DataOffsets[1] = safetensors.U8, off+product(shape)
		return ti
	}
	kb, vb := f32("blk.0.attn_k_b.weight", 0, 2, 4, 3), f32("blk.0.attn_v_b.weight", 96, 2, 5, 4)
	v := Chain{preset("gguf-deepseek2")}.Apply([]safetensors.TensorInfo{kb, vb}, Env{})
	x, ok := v.Tensor("model.layers.0.self_attn.kv_b_proj.weight")
	if !ok || len(v.Tensors) != 1 || len(v.Dropped) != 0 || len(v.Errors) != 0 || !slices.Equal(x.Shape, []uint64{16, 4}) ||
		!slices.Equal(x.Segments, []Segment{{Source: 0, Offset: 0, Length: 48, Transposed: true}, {Source: 1, Offset: 0, Length: 80},
			{Source: 0, Offset: 48, Length: 48, Transposed: true}, {Source: 1, Offset: 80, Length: 80}}) {
		t.Errorf("plain halves: names %v, dropped %v, errors %v, kv_b_proj %+v", names(v), v.Dropped, v.Errors, x)
	}
	for _, in := range [][]safetensors.TensorInfo{
		{u8("blk.0.attn_k_b.weight", 0, 2, 4, 3), u8("blk.0.attn_v_b.weight", 24, 2, 5, 4)},
		{kb, u8("blk.0.attn_v_b.weight", 96, 2, 5, 4)},
	} {
		v := Chain{preset("gguf-deepseek2")}.Apply(in, Env{})
		if len(v.Tensors) != 0 || len(v.Dropped) != 2 || len(v.Errors) != 0 {
			t.Errorf("%s, %s: names %v, dropped %v, errors %v", in[0].DType, in[1].DType, names(v), v.Dropped, v.Errors)
		}
		for _, d := range v.Dropped {
			if !strings.Contains(d.Reason, "GGML block type") {
				t.Errorf("%s dropped for %q", d.Name, d.Reason)
			}
		}
	}
	v = Chain{preset("gguf-deepseek2")}.Apply([]safetensors.TensorInfo{f32("blk.0.attn_kv_b.weight", 0, 16, 4)}, Env{})
	if x, ok := v.Tensor("model.layers.0.self_attn.kv_b_proj.weight"); !ok || tiled(x) || len(v.Tensors) != 1 {
		t.Errorf("attn_kv_b: %v %+v", names(v), x)
	}
}

// TestGGUFPresetGptOssExperts: gpt-oss's ffn_down_exps [E, H, ff] is HF's
// down_proj [E, ff, H] read transposed; ffn_gate_exps and ffn_up_exps
// [E, ff, H] are HF's gate_up_proj [E, H, 2ff] read a row of each in turn,
// then transposed, and their biases [E, ff] gate_up_proj_bias [E, 2ff],
// a value of each in turn. No byte moves: each keeps its sources whole.
func TestGGUFPresetGptOssExperts(t *testing.T) {
	v := Chain{preset("gguf-gpt-oss")}.Apply([]safetensors.TensorInfo{f32("blk.0.ffn_gate_exps.weight", 0, 2, 3, 4),
		f32("blk.0.ffn_up_exps.weight", 96, 2, 3, 4), f32("blk.0.ffn_gate_exps.bias", 192, 2, 3), f32("blk.0.ffn_up_exps.bias", 216, 2, 3),
		f32("blk.0.ffn_down_exps.weight", 240, 2, 4, 3)}, Env{})
	if len(v.Dropped) != 0 || len(v.Errors) > 0 || len(v.Tensors) != 3 || len(v.Absent) != 0 {
		t.Fatalf("gpt-oss: names %v, dropped %v, errors %v, absent %v", names(v), v.Dropped, v.Errors, v.Absent)
	}
	if d, _ := v.Tensor("model.layers.0.mlp.experts.down_proj"); !d.Transposed || !slices.Equal(d.Shape, []uint64{2, 3, 4}) || d.Interleave != nil {
		t.Errorf("down_proj: %+v", d)
	}
	gu, _ := v.Tensor("model.layers.0.mlp.experts.gate_up_proj")
	if !gu.Transposed || !slices.Equal(gu.Shape, []uint64{2, 4, 6}) || !slices.Equal(gu.Interleave, []uint64{16, 16}) ||
		!slices.Equal(gu.Segments, []Segment{{Source: 0, Offset: 0, Length: 96}, {Source: 1, Offset: 0, Length: 96}}) {
		t.Errorf("gate_up_proj: %+v", gu)
	}
	if b, _ := v.Tensor("model.layers.0.mlp.experts.gate_up_proj_bias"); !slices.Equal(b.Shape, []uint64{2, 6}) || !slices.Equal(b.Interleave, []uint64{4, 4}) {
		t.Errorf("gate_up_proj_bias: %+v", b)
	}
}

// TestAbsent: an absent line names the other side's tensors this side
// does not hold, its braces evaluated over config values; a value the
// config lacks makes the line say nothing.
func TestAbsent(t *testing.T) {
	a, err := Parse("t", "name t\nabsent model.layers.{num_hidden_layers}.*  the MTP layer # skipped\nabsent model.vision_tower.* in the mmproj file\nabsent x.{head_dim+1}.y no")
	if err != nil {
		t.Fatal(err)
	}
	v := Chain{a}.Apply(nil, Env{"num_hidden_layers": 61})
	want := []Absent{{Glob: "model.layers.61.*", Reason: "the MTP layer", Rule: "t:2: absent model.layers.{num_hidden_layers}.*"},
		{Glob: "model.vision_tower.*", Reason: "in the mmproj file", Rule: "t:3: absent model.vision_tower.*"}}
	if len(v.Absent) != len(want) {
		t.Fatalf("absent %+v", v.Absent)
	}
	for i, w := range want {
		if g := v.Absent[i]; g.Glob != w.Glob || g.Reason != w.Reason || g.Rule != w.Rule {
			t.Errorf("absent %d: %+v, want %+v", i, g, w)
		}
	}
	for name, k := range map[string]int{"model.layers.61.enorm.weight": 0, "model.layers.60.enorm.weight": -1,
		"model.vision_tower.vision_model.post_layernorm.weight": 1, "model.language_model.layers.0.mlp.up_proj.weight": -1} {
		if got := v.AbsentFor(name); got != k {
			t.Errorf("AbsentFor(%s) = %d, want %d", name, got, k)
		}
	}
}
