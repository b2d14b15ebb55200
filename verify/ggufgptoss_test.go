package verify

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/gguf"
	"github.com/ckptcheck/ckptcheck/internal/fixture"
	w "github.com/ckptcheck/ckptcheck/internal/ggufwrite"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// tinyMXFP4 is an MXFP4 expert stack, [E][rows][blocks] blocks of 32
// values: random nibbles, exponents near 2^-4.
type tinyMXFP4 struct {
	nibbles [][][][32]byte
	exps    [][][]byte
}

func newTinyMXFP4(rng *rand.Rand, experts, rows, cols int) tinyMXFP4 {
	var m tinyMXFP4
	for range experts {
		ns, es := make([][][32]byte, rows), make([][]byte, rows)
		for r := range ns {
			ns[r], es[r] = make([][32]byte, cols/32), make([]byte, cols/32)
			for b := range ns[r] {
				for i := range ns[r][b] {
					ns[r][b][i] = byte(rng.IntN(16))
				}
				es[r][b] = byte(121 + rng.IntN(4))
			}
		}
		m.nibbles, m.exps = append(m.nibbles, ns), append(m.exps, es)
	}
	return m
}

// hf is the stack as gpt-oss ships it: X_blocks U8 [E, rows, G, 16] (value
// 2k in byte k's low nibble) and X_scales U8 [E, rows, G].
func (m tinyMXFP4) hf(name string) []fixture.Tensor {
	var blocks, scales []byte
	for e := range m.nibbles {
		for r, row := range m.nibbles[e] {
			for b, ns := range row {
				for k := range 16 {
					blocks = append(blocks, ns[2*k]|ns[2*k+1]<<4)
				}
				scales = append(scales, m.exps[e][r][b])
			}
		}
	}
	E, rows, g := uint64(len(m.nibbles)), uint64(len(m.nibbles[0])), uint64(len(m.nibbles[0][0]))
	return []fixture.Tensor{{Name: name + "_blocks", DType: safetensors.U8, Shape: []uint64{E, rows, g, 16}, Data: blocks},
		{Name: name + "_scales", DType: safetensors.U8, Shape: []uint64{E, rows, g}, Data: scales}}
}

// ggml is what GptOssModel.repack_mxfp4 writes of the rows keep(r) picks:
// GGML MXFP4 blocks (the exponent, then value j in byte j's low nibble and
// value j+16 in its high one), the stack's experts in the order given.
func (m tinyMXFP4) ggml(name string, order []int, keep func(int) bool) w.Tensor {
	var data []byte
	kept := 0
	for _, e := range order {
		kept = 0
		for r, row := range m.nibbles[e] {
			if !keep(r) {
				continue
			}
			kept++
			for b, ns := range row {
				data = append(data, m.exps[e][r][b])
				for j := range 16 {
					data = append(data, ns[j]|ns[j+16]<<4)
				}
			}
		}
	}
	cols := uint64(32 * len(m.nibbles[0][0]))
	return w.Tensor{Name: name, Dims: []uint64{cols, uint64(kept), uint64(len(order))}, Type: uint32(gguf.TypeMXFP4), Data: data}
}

func ggufF32(name string, shape []uint64, v []float32) w.Tensor {
	dims := slices.Clone(shape)
	slices.Reverse(dims)
	return w.Tensor{Name: name, Dims: dims, Type: uint32(gguf.TypeF32), Data: fixture.Encode(v, safetensors.F32)}
}

// TestDiffGGUFGptOss: a gpt-oss MXFP4 release of two layers, two experts
// of 32 (hidden 32), against its GGUF: gguf-gpt-oss, chosen by model_type,
// maps the attention with its biases and sinks, the router with its bias,
// and ffn_down_exps (GGML MXFP4, the published rows) as down_proj read
// transposed, of the published shape: its values are compared through the
// GGML codec's bands of columns (ColumnSpans), as its bias's are. HF's
// interleaved gate_up_proj, which the converter splits into ffn_gate_exps
// (even rows) and ffn_up_exps (odd rows), is read back from the two in
// turn, transposed, and compared the same way; its bias too, element by
// element. A tensor of another layer, a tensor left out, a swapped expert,
// and gate and up (or their biases) the wrong way round fail.
func TestDiffGGUFGptOss(t *testing.T) {
	const experts, hidden, ff = 2, tinyHidden, 32
	rng := rand.New(rand.NewPCG(25, 6))
	dense := []hfTensor{tinyTensor(rng, "model.embed_tokens.weight", "token_embd.weight", 0, tinyVocab, hidden),
		tinyTensor(rng, "model.norm.weight", "output_norm.weight", 1, hidden),
		tinyTensor(rng, "lm_head.weight", "output.weight", 0, tinyVocab, hidden)}
	type layer struct {
		gateUp, down         tinyMXFP4
		gateUpBias, downBias hfTensor
	}
	var layers [2]layer
	for l := range layers {
		p, g := fmt.Sprintf("model.layers.%d.", l), fmt.Sprintf("blk.%d.", l)
		mk := func(name, gname string, mean float64, shape ...uint64) hfTensor {
			return tinyTensor(rng, p+name, g+gname, mean, shape...)
		}
		for _, x := range []struct {
			hf, gguf   string
			rows, cols uint64
		}{{"q", "attn_q", tinyHeads * 32, hidden}, {"k", "attn_k", tinyKV * 32, hidden}, {"v", "attn_v", tinyKV * 32, hidden},
			{"o", "attn_output", hidden, tinyHeads * 32}} {
			dense = append(dense, mk("self_attn."+x.hf+"_proj.weight", x.gguf+".weight", 0, x.rows, x.cols),
				mk("self_attn."+x.hf+"_proj.bias", x.gguf+".bias", 0, x.rows))
		}
		dense = append(dense, mk("self_attn.sinks", "attn_sinks.weight", 0, tinyHeads),
			mk("input_layernorm.weight", "attn_norm.weight", 1, hidden),
			mk("post_attention_layernorm.weight", "post_attention_norm.weight", 1, hidden),
			mk("mlp.router.weight", "ffn_gate_inp.weight", 0, experts, hidden), mk("mlp.router.bias", "ffn_gate_inp.bias", 0, experts))
		layers[l] = layer{newTinyMXFP4(rng, experts, 2*ff, hidden), newTinyMXFP4(rng, experts, hidden, ff),
			mk("mlp.experts.gate_up_proj_bias", "", 0, experts, 2*ff), mk("mlp.experts.down_proj_bias", "ffn_down_exps.bias", 0, experts, hidden)}
	}
	pubTensors := tinyFixture(dense)
	for l, x := range layers {
		p := fmt.Sprintf("model.layers.%d.mlp.experts.", l)
		pubTensors = slices.Concat(pubTensors, x.gateUp.hf(p+"gate_up_proj"), x.down.hf(p+"down_proj"), tinyFixture([]hfTensor{x.gateUpBias, x.downBias}))
	}
	pub := export(t, pubTensors, map[string]any{"model_type": "gpt_oss", "architectures": []string{"GptOssForCausalLM"},
		"hidden_size": hidden, "num_attention_heads": tinyHeads, "num_key_value_heads": tinyKV, "head_dim": 32, "num_hidden_layers": 2,
		"num_local_experts": experts, "intermediate_size": ff, "vocab_size": tinyVocab, "tie_word_embeddings": false, "torch_dtype": "float32",
		"quantization_config": map[string]any{"quant_method": "mxfp4",
			"modules_to_not_convert": []string{"model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"}}})
	even, odd, all := func(r int) bool { return r%2 == 0 }, func(r int) bool { return r%2 == 1 }, func(int) bool { return true }
	for _, tt := range []struct {
		name     string
		edit     ggufEdit
		reversed bool // blk.1.ffn_down_exps and its bias stacked expert 1 first
		gateUp   bool // ffn_gate_exps written from the odd rows, ffn_up_exps from the even
		biases   bool // their biases too, in blk.1
		want     []string
	}{
		{"faithful", ggufEdit{}, false, false, false, nil},
		{"other layer", ggufEdit{swap: [2]string{"blk.1.attn_q.weight", "blk.0.attn_q.weight"}}, false, false, false,
			unrelated("model.layers.1.self_attn.q_proj.weight")},
		{"missing", ggufEdit{drop: "blk.1.attn_sinks.weight"}, false, false, false, []string{"missing_key model.layers.1.self_attn.sinks"}},
		{"experts swapped", ggufEdit{}, true, false, false, []string{"quantization_error model.layers.1.mlp.experts.down_proj",
			"reinitialized model.layers.1.mlp.experts.down_proj", "reinitialized model.layers.1.mlp.experts.down_proj_bias"}},
		{"gate and up mixed up", ggufEdit{}, false, true, false, []string{
			"quantization_error model.layers.0.mlp.experts.gate_up_proj", "quantization_error model.layers.1.mlp.experts.gate_up_proj",
			"reinitialized model.layers.0.mlp.experts.gate_up_proj", "reinitialized model.layers.1.mlp.experts.gate_up_proj"}},
		{"biases mixed up", ggufEdit{}, false, false, true, []string{"reinitialized model.layers.1.mlp.experts.gate_up_proj_bias"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := tt.edit
			e.arch, e.unpermuted = "gpt-oss", true
			e.types = map[string]uint32{"blk.0.ffn_gate_inp.weight": uint32(gguf.TypeF32), "blk.1.ffn_gate_inp.weight": uint32(gguf.TypeF32)}
			f := tinyGGUFOf(dense, e)
			for l, x := range layers {
				g := fmt.Sprintf("blk.%d.", l)
				order := []int{0, 1}
				if tt.reversed && l == 1 {
					order = []int{1, 0}
				}
				gate, up := even, odd
				if tt.gateUp {
					gate, up = odd, even
				}
				var gateBias, upBias []float32
				for i, v := range x.gateUpBias.vals {
					if (i%2 == 0) != (tt.biases && l == 1) {
						gateBias = append(gateBias, v)
					} else {
						upBias = append(upBias, v)
					}
				}
				f.Tensors = append(f.Tensors, x.gateUp.ggml(g+"ffn_gate_exps.weight", []int{0, 1}, gate), x.gateUp.ggml(g+"ffn_up_exps.weight", []int{0, 1}, up),
					x.down.ggml(g+"ffn_down_exps.weight", order, all),
					ggufF32(g+"ffn_gate_exps.bias", []uint64{experts, ff}, gateBias), ggufF32(g+"ffn_up_exps.bias", []uint64{experts, ff}, upBias),
					ggufF32(x.downBias.gguf, x.downBias.shape, slices.Concat(x.downBias.vals[order[0]*hidden:][:hidden], x.downBias.vals[order[1]*hidden:][:hidden])))
			}
			exp := filepath.Join(t.TempDir(), "model.gguf")
			must(t, os.WriteFile(exp, f.Bytes(), 0o644))
			got, unsupported, rep := ggufDiff(t, pub, exp, "gguf-gpt-oss")
			if want := slices.Sorted(slices.Values(tt.want)); !slices.Equal(got, want) {
				t.Errorf("errors %q, want %q", got, want)
			}
			if len(unsupported) != 0 {
				t.Errorf("quantized_unsupported %+v, want none: down_proj is read by bands of columns", unsupported)
			}
			checkAbsent(t, pub, exp, nil)
			if compared := len(dense) + 4*len(layers); len(tt.want) == 0 && (rep.Compared != compared || rep.Mismatched != 0) {
				t.Errorf("compared %d (want %d), mismatched %d", rep.Compared, compared, rep.Mismatched)
			}
		})
	}
}

// checkAbsent runs the diff and checks its adapter_absent findings: the
// keys of published each absent line (by its glob) covers. It returns the
// comparison.
func checkAbsent(t *testing.T, pub, exp string, want map[string][]string) *Comparison {
	t.Helper()
	got := map[string][]string{}
	d := diffPaths(t, pub, exp, DiffOptions{WeightsOnly: true})
	for _, f := range d.Findings {
		if f.Code != CodeAdapterAbsent {
			continue
		}
		_, glob, _ := strings.Cut(f.Message, ": absent ")
		glob, _, _ = strings.Cut(glob, ")")
		if f.Side != Published || f.Severity != Warning || glob == "" {
			t.Errorf("%+v", f)
		}
		got[glob] = f.Keys
	}
	if len(got) != len(want) {
		t.Errorf("adapter_absent %q, want %q", got, want)
	}
	for g, keys := range want {
		if !slices.Equal(got[g], keys) {
			t.Errorf("adapter_absent %s: %q, want %q", g, got[g], keys)
		}
	}
	return d
}

// TestDiffGGUFGptOssBF16: a dequantized gpt-oss release (gate_up_proj
// [E, H, 2ff], down_proj [E, ff, H], here F32) against its GGUF, which the
// converter writes transposed: ffn_down_exps [E, H, ff] in a plain type is
// read transposed and compared value for value, and so is gate_up_proj,
// from ffn_gate_exps and ffn_up_exps [E, ff, H] (its transpose's even and
// odd rows) read in turn. Two experts swapped in ffn_down_exps, or gate
// and up the wrong way round, fail.
func TestDiffGGUFGptOssBF16(t *testing.T) {
	const experts, hidden, ff = 2, tinyHidden, 32
	rng := rand.New(rand.NewPCG(25, 9))
	dense := []hfTensor{tinyTensor(rng, "model.embed_tokens.weight", "token_embd.weight", 0, tinyVocab, hidden),
		tinyTensor(rng, "model.norm.weight", "output_norm.weight", 1, hidden),
		tinyTensor(rng, "model.layers.0.mlp.router.weight", "blk.0.ffn_gate_inp.weight", 0, experts, hidden),
		tinyTensor(rng, "model.layers.0.mlp.experts.down_proj_bias", "blk.0.ffn_down_exps.bias", 0, experts, hidden)}
	gateUp := tinyTensor(rng, "model.layers.0.mlp.experts.gate_up_proj", "", 0, experts, hidden, 2*ff)
	down := tinyTensor(rng, "model.layers.0.mlp.experts.down_proj", "", 0, experts, ff, hidden)
	pub := export(t, tinyFixture(slices.Concat(dense, []hfTensor{gateUp, down})), map[string]any{"model_type": "gpt_oss",
		"architectures": []string{"GptOssForCausalLM"}, "hidden_size": hidden, "num_attention_heads": tinyHeads, "num_key_value_heads": tinyKV,
		"head_dim": 32, "num_hidden_layers": 1, "num_local_experts": experts, "intermediate_size": ff, "vocab_size": tinyVocab,
		"tie_word_embeddings": true, "torch_dtype": "float32"})
	for _, tt := range []struct {
		name   string
		order  []int
		gateUp bool // ffn_gate_exps written from the odd rows, ffn_up_exps from the even
		want   []string
	}{
		{"faithful", []int{0, 1}, false, nil},
		{"experts swapped", []int{1, 0}, false, []string{"reinitialized model.layers.0.mlp.experts.down_proj"}},
		{"gate and up mixed up", []int{0, 1}, true, []string{"reinitialized model.layers.0.mlp.experts.gate_up_proj"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := tinyGGUFOf(dense, ggufEdit{arch: "gpt-oss", unpermuted: true, types: map[string]uint32{"blk.0.ffn_gate_inp.weight": uint32(gguf.TypeF32)}})
			f.KV[1] = w.P("gpt-oss.block_count", w.U32(1)) // one layer
			var stored []float32                           // data_torch.transpose(-1, -2): [E, H, ff]
			for _, e := range tt.order {
				for h := range hidden {
					for j := range ff {
						stored = append(stored, down.vals[(e*ff+j)*hidden+h])
					}
				}
			}
			// gate_up_proj.transpose(-1, -2): [E, 2ff, H], its rows split
			// data[:, ::2], data[:, 1::2].
			var halves [2][]float32
			for e := range experts {
				for j := range 2 * ff {
					k := j % 2
					if tt.gateUp {
						k = 1 - k
					}
					for h := range hidden {
						halves[k] = append(halves[k], gateUp.vals[(e*hidden+h)*2*ff+j])
					}
				}
			}
			f.Tensors = append(f.Tensors, ggufF32("blk.0.ffn_down_exps.weight", []uint64{experts, hidden, ff}, stored),
				ggufF32("blk.0.ffn_gate_exps.weight", []uint64{experts, ff, hidden}, halves[0]),
				ggufF32("blk.0.ffn_up_exps.weight", []uint64{experts, ff, hidden}, halves[1]))
			exp := filepath.Join(t.TempDir(), "model.gguf")
			must(t, os.WriteFile(exp, f.Bytes(), 0o644))
			got, rep := ggufErrors(t, pub, exp, "gguf-gpt-oss")
			if want := slices.Sorted(slices.Values(tt.want)); !slices.Equal(got, want) {
				t.Errorf("errors %q, want %q", got, want)
			}
			if compared := len(dense) + 2; rep.Compared != compared {
				t.Errorf("compared %d, want %d", rep.Compared, compared)
			}
			checkAbsent(t, pub, exp, nil)
		})
	}
}
