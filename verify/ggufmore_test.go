package verify

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/gguf"
	w "github.com/ckptcheck/ckptcheck/internal/ggufwrite"
)

// tinyTensor makes an HF tensor of normal values (sd 0.05, around mean)
// and its GGUF name.
func tinyTensor(rng *rand.Rand, name, g string, mean float64, shape ...uint64) hfTensor {
	n := 1
	for _, d := range shape {
		n *= int(d)
	}
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(mean + rng.NormFloat64()*0.05)
	}
	return hfTensor{name, g, shape, v}
}

// tinyGemma2 is a Gemma 2 of two layers in the tinyLlama's sizes: four
// norms a layer, the head tied.
func tinyGemma2() []hfTensor {
	rng := rand.New(rand.NewPCG(25, 2))
	ts := []hfTensor{tinyTensor(rng, "model.embed_tokens.weight", "token_embd.weight", 0, tinyVocab, tinyHidden),
		tinyTensor(rng, "model.norm.weight", "output_norm.weight", 0.3, tinyHidden)}
	for l := range 2 {
		p, g := fmt.Sprintf("model.layers.%d.", l), fmt.Sprintf("blk.%d.", l)
		mk := func(name, gname string, mean float64, shape ...uint64) hfTensor {
			return tinyTensor(rng, p+name, g+gname, mean, shape...)
		}
		ts = append(ts,
			mk("self_attn.q_proj.weight", "attn_q.weight", 0, tinyHeads*32, tinyHidden),
			mk("self_attn.k_proj.weight", "attn_k.weight", 0, tinyKV*32, tinyHidden),
			mk("self_attn.v_proj.weight", "attn_v.weight", 0, tinyKV*32, tinyHidden),
			mk("self_attn.o_proj.weight", "attn_output.weight", 0, tinyHidden, tinyHeads*32),
			mk("mlp.gate_proj.weight", "ffn_gate.weight", 0, tinyFF, tinyHidden),
			mk("mlp.up_proj.weight", "ffn_up.weight", 0, tinyFF, tinyHidden),
			mk("mlp.down_proj.weight", "ffn_down.weight", 0, tinyHidden, tinyFF),
			mk("input_layernorm.weight", "attn_norm.weight", 0.5, tinyHidden),
			mk("post_attention_layernorm.weight", "post_attention_norm.weight", -0.2, tinyHidden),
			mk("pre_feedforward_layernorm.weight", "ffn_norm.weight", 2, tinyHidden),
			// Values near 0 lose bits in w+1: the shift's steps allow it.
			mk("post_feedforward_layernorm.weight", "post_ffw_norm.weight", 0, tinyHidden))
	}
	return ts
}

// ggufErrors runs the diff with values and returns "code key" of every
// error, sorted, failing on a quantized_unsupported.
func ggufErrors(t *testing.T, pub, exp, adapter string) ([]string, *ValueReport) {
	t.Helper()
	got, unsupported, rep := ggufDiff(t, pub, exp, adapter)
	for _, f := range unsupported {
		t.Errorf("unexpected %s: %s", f.Code, f.Message)
	}
	return got, rep
}

// ggufDiff is ggufErrors returning the quantized_unsupported findings.
func ggufDiff(t *testing.T, pub, exp, adapter string) ([]string, []Finding, *ValueReport) {
	t.Helper()
	d := diffPaths(t, pub, exp, DiffOptions{WeightsOnly: true})
	if d.Exported.View.Adapter != adapter {
		t.Errorf("exported adapter %s, want %s", d.Exported.View.Adapter, adapter)
	}
	rep, err := d.CompareValues(context.Background(), ValueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	var unsupported []Finding
	for _, f := range append(slices.Clone(d.Findings), rep.Findings...) {
		if f.Severity == Error {
			got = append(got, string(f.Code)+" "+f.Key)
		}
		if f.Code == CodeQuantizedUnsupported {
			unsupported = append(unsupported, f)
		}
		t.Logf("%s %s %s: %s", f.Severity, f.Code, f.Key, f.Message)
	}
	slices.Sort(got)
	return got, unsupported, rep
}

// TestDiffGGUFGemma: llama.cpp stores Gemma's norm weights as w+1;
// gguf-gemma2, chosen by model_type, reads them back: a faithful
// conversion passes, one written without the +1 fails on every norm.
func TestDiffGGUFGemma(t *testing.T) {
	ts := tinyGemma2()
	pub := export(t, tinyFixture(ts), map[string]any{"model_type": "gemma2", "architectures": []string{"Gemma2ForCausalLM"},
		"hidden_size": tinyHidden, "num_attention_heads": tinyHeads, "num_key_value_heads": tinyKV, "head_dim": 32,
		"num_hidden_layers": 2, "intermediate_size": tinyFF, "vocab_size": tinyVocab, "tie_word_embeddings": true, "torch_dtype": "float32"})
	var norms []string
	for _, h := range ts {
		if strings.HasSuffix(h.name, "norm.weight") {
			norms = append(norms, h.name)
		}
	}
	for _, tt := range []struct {
		name  string
		shift float32
	}{{"faithful", 1}, {"no +1", 0}} {
		t.Run(tt.name, func(t *testing.T) {
			exp := filepath.Join(t.TempDir(), "model.gguf")
			must(t, os.WriteFile(exp, tinyGGUFOf(ts, ggufEdit{arch: "gemma2", unpermuted: true, normShift: tt.shift}).Bytes(), 0o644))
			got, rep := ggufErrors(t, pub, exp, "gguf-gemma2")
			if tt.shift == 1 {
				if len(got) > 0 || rep.Compared != len(ts) || rep.Mismatched != 0 {
					t.Errorf("errors %q; compared %d (want %d), mismatched %d", got, rep.Compared, len(ts), rep.Mismatched)
				}
				return
			}
			var keys []string
			for _, g := range got {
				if code, key, _ := strings.Cut(g, " "); code == string(CodeQuantizationError) {
					keys = append(keys, key)
				}
			}
			if want := slices.Sorted(slices.Values(norms)); !slices.Equal(keys, want) {
				t.Errorf("quantization_error on %q, want every norm %q (errors %q)", keys, want, got)
			}
		})
	}
}

// tinyQwen3MoE is a Qwen3-MoE of two layers, two experts of 32 a layer:
// the dense tensors, and the experts' by expert.
func tinyQwen3MoE() (dense []hfTensor, experts [2][3][2]hfTensor) {
	rng := rand.New(rand.NewPCG(25, 3))
	dense = []hfTensor{tinyTensor(rng, "model.embed_tokens.weight", "token_embd.weight", 0, tinyVocab, tinyHidden),
		tinyTensor(rng, "model.norm.weight", "output_norm.weight", 1, tinyHidden)}
	for l := range 2 {
		p, g := fmt.Sprintf("model.layers.%d.", l), fmt.Sprintf("blk.%d.", l)
		mk := func(name, gname string, mean float64, shape ...uint64) hfTensor {
			return tinyTensor(rng, p+name, g+gname, mean, shape...)
		}
		dense = append(dense,
			mk("self_attn.q_proj.weight", "attn_q.weight", 0, tinyHeads*32, tinyHidden),
			mk("self_attn.k_proj.weight", "attn_k.weight", 0, tinyKV*32, tinyHidden),
			mk("self_attn.v_proj.weight", "attn_v.weight", 0, tinyKV*32, tinyHidden),
			mk("self_attn.o_proj.weight", "attn_output.weight", 0, tinyHidden, tinyHeads*32),
			mk("self_attn.q_norm.weight", "attn_q_norm.weight", 1, 32),
			mk("self_attn.k_norm.weight", "attn_k_norm.weight", 1, 32),
			mk("input_layernorm.weight", "attn_norm.weight", 1, tinyHidden),
			mk("post_attention_layernorm.weight", "ffn_norm.weight", 1, tinyHidden),
			mk("mlp.gate.weight", "ffn_gate_inp.weight", 0, 2, tinyHidden))
		for e := range 2 {
			x := fmt.Sprintf("mlp.experts.%d.", e)
			experts[l][0][e] = mk(x+"gate_proj.weight", "ffn_gate_exps.weight", 0, 32, tinyHidden)
			experts[l][1][e] = mk(x+"up_proj.weight", "ffn_up_exps.weight", 0, 32, tinyHidden)
			experts[l][2][e] = mk(x+"down_proj.weight", "ffn_down_exps.weight", 0, tinyHidden, 32)
		}
	}
	return dense, experts
}

// TestDiffGGUFQwen3MoE: the experts llama.cpp stacks into Q8_0
// ffn_*_exps [E, ff, H] compare one by one through gguf-qwen3moe (the
// router F32, as the converter keeps it); a stack in the wrong expert
// order fails on both experts.
func TestDiffGGUFQwen3MoE(t *testing.T) {
	dense, experts := tinyQwen3MoE()
	all := slices.Clone(dense)
	for l := range experts {
		for k := range experts[l] {
			all = append(all, experts[l][k][:]...)
		}
	}
	pub := export(t, tinyFixture(all), map[string]any{"model_type": "qwen3_moe", "architectures": []string{"Qwen3MoeForCausalLM"},
		"hidden_size": tinyHidden, "num_attention_heads": tinyHeads, "num_key_value_heads": tinyKV, "head_dim": 32,
		"num_hidden_layers": 2, "num_experts": 2, "moe_intermediate_size": 32, "vocab_size": tinyVocab,
		"tie_word_embeddings": true, "torch_dtype": "float32"})
	for _, tt := range []struct {
		name     string
		reversed bool // blk.1.ffn_up_exps stacked expert 1 first
		want     []string
	}{
		{"faithful", false, nil},
		{"experts swapped", true, slices.Concat(unrelated("model.layers.1.mlp.experts.0.up_proj.weight"),
			unrelated("model.layers.1.mlp.experts.1.up_proj.weight"))},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := tinyGGUFOf(dense, ggufEdit{arch: "qwen3moe", unpermuted: true,
				types: map[string]uint32{"blk.0.ffn_gate_inp.weight": uint32(gguf.TypeF32), "blk.1.ffn_gate_inp.weight": uint32(gguf.TypeF32)}})
			for l := range experts {
				for k := range experts[l] {
					stack := experts[l][k]
					if tt.reversed && l == 1 && k == 1 {
						stack[0], stack[1] = stack[1], stack[0]
					}
					var data []byte
					for _, x := range stack {
						data = append(data, quantizeQ8_0(x.vals)...)
					}
					s := stack[0].shape
					f.Tensors = append(f.Tensors, w.Tensor{Name: stack[0].gguf, Dims: []uint64{s[1], s[0], 2}, Type: uint32(gguf.TypeQ8_0), Data: data})
				}
			}
			exp := filepath.Join(t.TempDir(), "model.gguf")
			must(t, os.WriteFile(exp, f.Bytes(), 0o644))
			got, rep := ggufErrors(t, pub, exp, "gguf-qwen3moe")
			if want := slices.Sorted(slices.Values(tt.want)); !slices.Equal(got, want) {
				t.Errorf("errors %q, want %q", got, want)
			}
			if !tt.reversed && (rep.Compared != len(all) || rep.Mismatched != 0) {
				t.Errorf("compared %d (want %d), mismatched %d", rep.Compared, len(all), rep.Mismatched)
			}
		})
	}
}

// TestDiffGGUFPhi3: Phi-3's fused qkv_proj and gate_up_proj are llama.cpp's
// attn_qkv and ffn_up, whole; the rope factors the converter makes from
// rope_scaling are dropped.
func TestDiffGGUFPhi3(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 4))
	ts := []hfTensor{tinyTensor(rng, "model.embed_tokens.weight", "token_embd.weight", 0, tinyVocab, tinyHidden),
		tinyTensor(rng, "model.norm.weight", "output_norm.weight", 1, tinyHidden),
		tinyTensor(rng, "lm_head.weight", "output.weight", 0, tinyVocab, tinyHidden)}
	for l := range 2 {
		p, g := fmt.Sprintf("model.layers.%d.", l), fmt.Sprintf("blk.%d.", l)
		ts = append(ts,
			tinyTensor(rng, p+"self_attn.qkv_proj.weight", g+"attn_qkv.weight", 0, (tinyHeads+2*tinyKV)*32, tinyHidden),
			tinyTensor(rng, p+"self_attn.o_proj.weight", g+"attn_output.weight", 0, tinyHidden, tinyHeads*32),
			tinyTensor(rng, p+"mlp.gate_up_proj.weight", g+"ffn_up.weight", 0, 2*tinyFF, tinyHidden),
			tinyTensor(rng, p+"mlp.down_proj.weight", g+"ffn_down.weight", 0, tinyHidden, tinyFF),
			tinyTensor(rng, p+"input_layernorm.weight", g+"attn_norm.weight", 1, tinyHidden),
			tinyTensor(rng, p+"post_attention_layernorm.weight", g+"ffn_norm.weight", 1, tinyHidden))
	}
	pub := export(t, tinyFixture(ts), map[string]any{"model_type": "phi3", "architectures": []string{"Phi3ForCausalLM"},
		"hidden_size": tinyHidden, "num_attention_heads": tinyHeads, "num_key_value_heads": tinyKV,
		"num_hidden_layers": 2, "intermediate_size": tinyFF, "vocab_size": tinyVocab, "tie_word_embeddings": false, "torch_dtype": "float32"})
	f := tinyGGUFOf(ts, ggufEdit{arch: "phi3"})
	f.Tensors = append(f.Tensors, w.Tensor{Name: "rope_factors_long.weight", Dims: []uint64{16}, Type: uint32(gguf.TypeF32), Data: make([]byte, 64)})
	exp := filepath.Join(t.TempDir(), "model.gguf")
	must(t, os.WriteFile(exp, f.Bytes(), 0o644))
	got, rep := ggufErrors(t, pub, exp, "gguf-phi3")
	if len(got) > 0 || rep.Compared != len(ts) || rep.Mismatched != 0 {
		t.Errorf("errors %q; compared %d (want %d), mismatched %d", got, rep.Compared, len(ts), rep.Mismatched)
	}
}
