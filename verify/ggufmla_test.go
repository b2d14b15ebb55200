package verify

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ckptcheck/ckptcheck/gguf"
	w "github.com/ckptcheck/ckptcheck/internal/ggufwrite"
)

// A DeepSeek-V3 of two layers in the tinyLlama's sizes: 2 heads, MLA
// ranks of 32 (q_lora_rank, kv_lora_rank) and 32-dimension nope, rope and
// value heads; layer 0 dense (first_k_dense_replace 1), layer 1 two routed
// experts of 32, a shared expert, the router and its score-correction bias.
const tinyMLA = 32

func tinyDeepseekV3() (dense []hfTensor, kvB [2]hfTensor, experts [3][2]hfTensor) {
	rng := rand.New(rand.NewPCG(25, 5))
	dense = []hfTensor{tinyTensor(rng, "model.embed_tokens.weight", "token_embd.weight", 0, tinyVocab, tinyHidden),
		tinyTensor(rng, "model.norm.weight", "output_norm.weight", 1, tinyHidden),
		tinyTensor(rng, "lm_head.weight", "output.weight", 0, tinyVocab, tinyHidden)}
	for l := range 2 {
		p, g := fmt.Sprintf("model.layers.%d.", l), fmt.Sprintf("blk.%d.", l)
		mk := func(name, gname string, mean float64, shape ...uint64) hfTensor {
			return tinyTensor(rng, p+name, g+gname, mean, shape...)
		}
		dense = append(dense,
			mk("self_attn.q_a_proj.weight", "attn_q_a.weight", 0, tinyMLA, tinyHidden),
			mk("self_attn.q_a_layernorm.weight", "attn_q_a_norm.weight", 1, tinyMLA),
			mk("self_attn.q_b_proj.weight", "attn_q_b.weight", 0, tinyHeads*2*tinyMLA, tinyMLA),
			mk("self_attn.kv_a_proj_with_mqa.weight", "attn_kv_a_mqa.weight", 0, 2*tinyMLA, tinyHidden),
			mk("self_attn.kv_a_layernorm.weight", "attn_kv_a_norm.weight", 1, tinyMLA),
			mk("self_attn.o_proj.weight", "attn_output.weight", 0, tinyHidden, tinyHeads*tinyMLA),
			mk("input_layernorm.weight", "attn_norm.weight", 1, tinyHidden),
			mk("post_attention_layernorm.weight", "ffn_norm.weight", 1, tinyHidden))
		kvB[l] = mk("self_attn.kv_b_proj.weight", "attn_kv_b.weight", 0, tinyHeads*2*tinyMLA, tinyMLA)
		if l == 0 {
			dense = append(dense,
				mk("mlp.gate_proj.weight", "ffn_gate.weight", 0, tinyFF, tinyHidden),
				mk("mlp.up_proj.weight", "ffn_up.weight", 0, tinyFF, tinyHidden),
				mk("mlp.down_proj.weight", "ffn_down.weight", 0, tinyHidden, tinyFF))
			continue
		}
		dense = append(dense,
			mk("mlp.gate.weight", "ffn_gate_inp.weight", 0, 2, tinyHidden),
			mk("mlp.gate.e_score_correction_bias", "exp_probs_b.bias", 0, 2),
			mk("mlp.shared_experts.gate_proj.weight", "ffn_gate_shexp.weight", 0, tinyMLA, tinyHidden),
			mk("mlp.shared_experts.up_proj.weight", "ffn_up_shexp.weight", 0, tinyMLA, tinyHidden),
			mk("mlp.shared_experts.down_proj.weight", "ffn_down_shexp.weight", 0, tinyHidden, tinyMLA))
		for e := range 2 {
			x := fmt.Sprintf("mlp.experts.%d.", e)
			experts[0][e] = mk(x+"gate_proj.weight", "ffn_gate_exps.weight", 0, tinyMLA, tinyHidden)
			experts[1][e] = mk(x+"up_proj.weight", "ffn_up_exps.weight", 0, tinyMLA, tinyHidden)
			experts[2][e] = mk(x+"down_proj.weight", "ffn_down_exps.weight", 0, tinyHidden, tinyMLA)
		}
	}
	return dense, kvB, experts
}

// mlaSplit is DeepseekV2Model's split of kv_b_proj [H·(nope+v), rank]:
// kv_b.view(H, nope+v, rank) cut into k_b (transposed, [H, rank, nope])
// and v_b ([H, v, rank]), nope = v = rank = tinyMLA here.
func mlaSplit(kvB hfTensor) (kB, vB []float32) {
	const n = tinyMLA
	for h := range tinyHeads {
		head := kvB.vals[h*2*n*n : (h+1)*2*n*n]
		for r := range n {
			for c := range n {
				kB = append(kB, head[c*n+r])
			}
		}
		vB = append(vB, head[n*n:]...)
	}
	return kB, vB
}

// TestDiffGGUFDeepseek2: gguf-deepseek2, chosen by model_type, maps
// llama.cpp's MLA names, the dense first layer, the router and
// exp_probs_b.bias, the shared expert and the stacked experts, nothing
// permuted, every value compared. kv_b_proj, which the converter writes
// split per head into attn_k_b (transposed) and attn_v_b, is not rebuilt:
// the halves are adapter_dropped and the published kv_b_proj absent (one
// adapter_absent; an older GGUF's attn_kv_b is compared whole), as is the
// multi-token-prediction layer the converter skips. A
// tensor of another layer, a tensor left out and a swapped expert fail.
func TestDiffGGUFDeepseek2(t *testing.T) {
	dense, kvB, experts := tinyDeepseekV3()
	all := slices.Concat(dense, kvB[:])
	for k := range experts {
		all = append(all, experts[k][:]...)
	}
	// DeepSeek-V3's multi-token-prediction layer N (num_hidden_layers), two
	// of its tensors: the converter skips the layer.
	rng := rand.New(rand.NewPCG(25, 7))
	mtp := []hfTensor{tinyTensor(rng, "model.layers.2.eh_proj.weight", "", 0, tinyHidden, 2*tinyHidden),
		tinyTensor(rng, "model.layers.2.enorm.weight", "", 1, tinyHidden)}
	pub := export(t, tinyFixture(slices.Concat(all, mtp)), map[string]any{"model_type": "deepseek_v3", "architectures": []string{"DeepseekV3ForCausalLM"},
		"hidden_size": tinyHidden, "num_attention_heads": tinyHeads, "num_key_value_heads": tinyHeads, "num_hidden_layers": 2,
		"q_lora_rank": tinyMLA, "kv_lora_rank": tinyMLA, "qk_nope_head_dim": tinyMLA, "qk_rope_head_dim": tinyMLA, "v_head_dim": tinyMLA,
		"first_k_dense_replace": 1, "n_routed_experts": 2, "n_shared_experts": 1, "moe_intermediate_size": tinyMLA,
		"intermediate_size": tinyFF, "vocab_size": tinyVocab, "tie_word_embeddings": false, "torch_dtype": "float32"})
	for _, tt := range []struct {
		name     string
		edit     ggufEdit
		reversed bool // blk.1.ffn_up_exps stacked expert 1 first
		want     []string
		kvWhole  bool // attn_kv_b, as converters before the MLA split wrote it
	}{
		{"faithful", ggufEdit{}, false, nil, false},
		{"kv_b whole", ggufEdit{}, false, nil, true},
		{"other layer", ggufEdit{swap: [2]string{"blk.1.attn_q_b.weight", "blk.0.attn_q_b.weight"}}, false,
			unrelated("model.layers.1.self_attn.q_b_proj.weight"), false},
		{"missing", ggufEdit{drop: "blk.1.exp_probs_b.bias"}, false, []string{"missing_key model.layers.1.mlp.gate.e_score_correction_bias"}, false},
		{"experts swapped", ggufEdit{}, true, slices.Concat(unrelated("model.layers.1.mlp.experts.0.up_proj.weight"),
			unrelated("model.layers.1.mlp.experts.1.up_proj.weight")), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := tt.edit
			e.arch, e.unpermuted = "deepseek2", true
			e.types = map[string]uint32{"blk.1.ffn_gate_inp.weight": uint32(gguf.TypeF32)}
			f := tinyGGUFOf(dense, e)
			f.KV = append(f.KV, w.P("deepseek2.attention.kv_lora_rank", w.U32(tinyMLA)), w.P("deepseek2.leading_dense_block_count", w.U32(1)))
			for l, kv := range kvB {
				if tt.kvWhole {
					f.Tensors = append(f.Tensors, w.Tensor{Name: kv.gguf, Dims: []uint64{kv.shape[1], kv.shape[0]}, Type: uint32(gguf.TypeQ8_0), Data: quantizeQ8_0(kv.vals)})
					continue
				}
				kB, vB := mlaSplit(kv)
				g := fmt.Sprintf("blk.%d.", l)
				f.Tensors = append(f.Tensors,
					w.Tensor{Name: g + "attn_k_b.weight", Dims: []uint64{tinyMLA, tinyMLA, tinyHeads}, Type: uint32(gguf.TypeQ8_0), Data: quantizeQ8_0(kB)},
					w.Tensor{Name: g + "attn_v_b.weight", Dims: []uint64{tinyMLA, tinyMLA, tinyHeads}, Type: uint32(gguf.TypeQ8_0), Data: quantizeQ8_0(vB)})
			}
			for k := range experts {
				stack := experts[k]
				if tt.reversed && k == 1 {
					stack[0], stack[1] = stack[1], stack[0]
				}
				var data []byte
				for _, x := range stack {
					data = append(data, quantizeQ8_0(x.vals)...)
				}
				s := stack[0].shape
				f.Tensors = append(f.Tensors, w.Tensor{Name: stack[0].gguf, Dims: []uint64{s[1], s[0], 2}, Type: uint32(gguf.TypeQ8_0), Data: data})
			}
			exp := filepath.Join(t.TempDir(), "model.gguf")
			must(t, os.WriteFile(exp, f.Bytes(), 0o644))
			got, rep := ggufErrors(t, pub, exp, "gguf-deepseek2")
			compared, absent := len(all)-len(kvB), map[string][]string{
				"model.layers.*.self_attn.kv_b_proj.weight": {kvB[0].name, kvB[1].name},
				"model.layers.{num_hidden_layers}.*":        {mtp[0].name, mtp[1].name}}
			if tt.kvWhole {
				compared = len(all)
				delete(absent, "model.layers.*.self_attn.kv_b_proj.weight")
			}
			if want := slices.Sorted(slices.Values(tt.want)); !slices.Equal(got, want) {
				t.Errorf("errors %q, want %q", got, want)
			}
			checkAbsent(t, pub, exp, absent)
			if len(tt.want) == 0 && (rep.Compared != compared || rep.Mismatched != 0) {
				t.Errorf("compared %d (want %d), mismatched %d", rep.Compared, compared, rep.Mismatched)
			}
		})
	}
}

// TestDiffGGUFDeepseek2Architecture: with no config.json, auto picks
// gguf-deepseek2 by the GGUF's general.architecture.
func TestDiffGGUFDeepseek2Architecture(t *testing.T) {
	dense, kvB, _ := tinyDeepseekV3()
	all := slices.Concat(dense, kvB[:]) // attn_kv_b whole
	f := tinyGGUFOf(all, ggufEdit{arch: "deepseek2", unpermuted: true, types: map[string]uint32{"blk.1.ffn_gate_inp.weight": uint32(gguf.TypeF32)}})
	exp := filepath.Join(t.TempDir(), "model.gguf")
	must(t, os.WriteFile(exp, f.Bytes(), 0o644))
	d := diffPaths(t, export(t, tinyFixture(all), nil), exp, DiffOptions{WeightsOnly: true})
	if d.Exported.View.Adapter != "gguf-deepseek2" {
		t.Errorf("exported adapter %s, want gguf-deepseek2", d.Exported.View.Adapter)
	}
	for _, f := range d.Findings {
		if f.Severity == Error {
			t.Errorf("%s %s: %s", f.Code, f.Key, f.Message)
		}
	}
}
