package verify

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"math/rand/v2"

	"github.com/ckptcheck/ckptcheck/gguf"
	w "github.com/ckptcheck/ckptcheck/internal/ggufwrite"
	"github.com/ckptcheck/ckptcheck/internal/quantfixture"
	"github.com/ckptcheck/ckptcheck/quant"
)

// TestDiffGGUFDeepSeekKVB: a DeepSeek-V3 of one layer against its GGUF,
// whose converter (convert_hf_to_gguf.py DeepseekV2Model.modify_tensors @
// 0024aa74) splits kv_b_proj [H·(nope+v), rank] per head into attn_k_b
// [H, rank, nope] (k_b.transpose(1, 2)) and attn_v_b [H, v, rank]:
// gguf-deepseek2 reads the key rows of each head transposed, then its
// value rows, and compares kv_b_proj value for value. The heads' key
// halves swapped, or written untransposed, fail; in a GGML block type the
// halves are dropped and kv_b_proj is one adapter_absent, no error.
func TestDiffGGUFDeepSeekKVB(t *testing.T) {
	const heads, nope, v, rank = 2, 32, 32, tinyHidden
	rng := rand.New(rand.NewPCG(25, 11))
	dense := []hfTensor{tinyTensor(rng, "model.embed_tokens.weight", "token_embd.weight", 0, tinyVocab, tinyHidden),
		tinyTensor(rng, "model.norm.weight", "output_norm.weight", 1, tinyHidden),
		tinyTensor(rng, "model.layers.0.input_layernorm.weight", "blk.0.attn_norm.weight", 1, tinyHidden)}
	kvb := tinyTensor(rng, "model.layers.0.self_attn.kv_b_proj.weight", "", 0, heads*(nope+v), rank)
	pub := export(t, tinyFixture(append(slices.Clone(dense), kvb)), map[string]any{"model_type": "deepseek_v3",
		"architectures": []string{"DeepseekV3ForCausalLM"}, "hidden_size": tinyHidden, "num_attention_heads": heads,
		"num_key_value_heads": heads, "qk_nope_head_dim": nope, "v_head_dim": v, "kv_lora_rank": rank, "num_hidden_layers": 1,
		"vocab_size": tinyVocab, "tie_word_embeddings": true, "torch_dtype": "float32"})
	for _, tt := range []struct {
		name         string
		order        []int
		untransposed bool
		q8           bool
		want         []string
		absent       bool
	}{
		{"faithful", []int{0, 1}, false, false, nil, false},
		{"key halves of the heads swapped", []int{1, 0}, false, false, []string{"reinitialized model.layers.0.self_attn.kv_b_proj.weight"}, false},
		{"key halves untransposed", []int{0, 1}, true, false, []string{"adapter_error blk.0.attn_k_b.weight.mT", "adapter_error blk.0.attn_v_b.weight"}, true},
		{"Q8_0", []int{0, 1}, false, true, nil, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := tinyGGUFOf(dense, ggufEdit{arch: "deepseek2", unpermuted: true})
			f.KV[1] = w.P("deepseek2.block_count", w.U32(1))
			f.KV = append(f.KV, w.P("deepseek2.attention.kv_lora_rank", w.U32(rank))) // MLA: head_count_kv 1 on purpose
			kb, vb := kvbHalves(kvb.vals, heads, nope, v, rank, tt.order, tt.untransposed)
			kShape := []uint64{heads, rank, nope}
			if tt.untransposed {
				kShape = []uint64{heads, nope, rank}
			}
			if tt.q8 {
				f.Tensors = append(f.Tensors, w.Tensor{Name: "blk.0.attn_k_b.weight", Dims: []uint64{nope, rank, heads}, Type: uint32(gguf.TypeQ8_0), Data: quantizeQ8_0(kb)},
					w.Tensor{Name: "blk.0.attn_v_b.weight", Dims: []uint64{rank, v, heads}, Type: uint32(gguf.TypeQ8_0), Data: quantizeQ8_0(vb)})
			} else {
				f.Tensors = append(f.Tensors, ggufF32("blk.0.attn_k_b.weight", kShape, kb), ggufF32("blk.0.attn_v_b.weight", []uint64{heads, v, rank}, vb))
			}
			exp := filepath.Join(t.TempDir(), "model.gguf")
			must(t, os.WriteFile(exp, f.Bytes(), 0o644))
			got, rep := ggufErrors(t, pub, exp, "gguf-deepseek2")
			if want := slices.Sorted(slices.Values(tt.want)); !slices.Equal(got, want) {
				t.Errorf("errors %q, want %q", got, want)
			}
			compared := len(dense) + 1
			absent := map[string][]string(nil)
			if tt.absent {
				compared--
				absent = map[string][]string{"model.layers.*.self_attn.kv_b_proj.weight": {kvb.name}}
			}
			if rep.Compared != compared {
				t.Errorf("compared %d, want %d", rep.Compared, compared)
			}
			checkAbsent(t, pub, exp, absent)
		})
	}
}

// kvbHalves is what the converter writes of kv_b_proj [heads·(nope+v),
// rank], head by head: k_b [rank, nope] (k_b.transpose(1, 2); [nope, rank]
// when untransposed), the heads' key halves in the order given, and v_b
// [v, rank].
func kvbHalves(vals []float32, heads, nope, v, rank int, order []int, untransposed bool) (kb, vb []float32) {
	for h := range heads {
		head := vals[order[h]*(nope+v)*rank:]
		if untransposed {
			kb = append(kb, head[:nope*rank]...)
		} else {
			for c := range rank {
				for r := range nope {
					kb = append(kb, head[r*rank+c])
				}
			}
		}
		vb = append(vb, vals[h*(nope+v)*rank+nope*rank:][:v*rank]...)
	}
	return kb, vb
}

// TestDiffGGUFDeepSeekFP8: DeepSeek-V3 ships kv_b_proj in FP8 blocks; the
// converter dequantizes it before the split. Against a plain GGUF the
// published blocks are decoded in bands of whole blocks between the heads'
// edges and compared with the halves read back: equal values pass, the
// key halves swapped fail. Blocks taller than a head's halves cannot be cut
// there: kv_b_proj is not compared, said so, and nothing fails.
func TestDiffGGUFDeepSeekFP8(t *testing.T) {
	const heads, nope, v, rank = 2, 16, 16, tinyHidden
	rng := rand.New(rand.NewPCG(25, 12))
	dense := []hfTensor{tinyTensor(rng, "model.embed_tokens.weight", "token_embd.weight", 0, tinyVocab, tinyHidden),
		tinyTensor(rng, "model.norm.weight", "output_norm.weight", 1, tinyHidden)}
	kvb := tinyTensor(rng, "model.layers.0.self_attn.kv_b_proj.weight", "", 0, heads*(nope+v), rank)
	for _, tt := range []struct {
		name      string
		block     uint64 // rows of an FP8 block
		order     []int
		want      []string
		compared  int
		unreadSub string
	}{
		{"faithful", 16, []int{0, 1}, nil, 3, ""},
		{"key halves swapped", 16, []int{1, 0}, []string{"quantization_error model.layers.0.self_attn.kv_b_proj.weight",
			"reinitialized model.layers.0.self_attn.kv_b_proj.weight"}, 3, ""},
		{"blocks across the heads' edges", 32, []int{0, 1}, nil, 2, "tiles of 32 rows"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			q := quantfixture.BlockFP8{Rows: tt.block, Cols: 16}
			fp8 := q.Quantize(tinyFixture([]hfTensor{kvb})[0])
			codec, err := quant.NewBlockFP8(tt.block, 16)
			if err != nil {
				t.Fatal(err)
			}
			decoded := make([]float32, len(kvb.vals))
			d := quant.Dims{Rows: heads * (nope + v), Cols: rank}
			must(t, codec.Decode(d, 0, d.Rows, [][]byte{fp8[0].Data, fp8[1].Data}, decoded))
			pub := export(t, append(tinyFixture(dense), fp8...), map[string]any{"model_type": "deepseek_v3",
				"architectures": []string{"DeepseekV3ForCausalLM"}, "hidden_size": tinyHidden, "num_attention_heads": heads,
				"num_key_value_heads": heads, "qk_nope_head_dim": nope, "v_head_dim": v, "kv_lora_rank": rank, "num_hidden_layers": 1,
				"vocab_size": tinyVocab, "tie_word_embeddings": true, "torch_dtype": "bfloat16",
				"quantization_config": q.Config()})
			f := tinyGGUFOf(dense, ggufEdit{arch: "deepseek2", unpermuted: true})
			f.KV[1] = w.P("deepseek2.block_count", w.U32(1))
			f.KV = append(f.KV, w.P("deepseek2.attention.kv_lora_rank", w.U32(rank)))
			kb, vb := kvbHalves(decoded, heads, nope, v, rank, tt.order, false)
			f.Tensors = append(f.Tensors, ggufF32("blk.0.attn_k_b.weight", []uint64{heads, rank, nope}, kb),
				ggufF32("blk.0.attn_v_b.weight", []uint64{heads, v, rank}, vb))
			exp := filepath.Join(t.TempDir(), "model.gguf")
			must(t, os.WriteFile(exp, f.Bytes(), 0o644))
			got, rep := ggufErrors(t, pub, exp, "gguf-deepseek2")
			if want := slices.Sorted(slices.Values(tt.want)); !slices.Equal(got, want) {
				t.Errorf("errors %q, want %q", got, want)
			}
			if rep.Compared != tt.compared {
				t.Errorf("compared %d, want %d", rep.Compared, tt.compared)
			}
			if tt.unreadSub != "" && !slices.ContainsFunc(rep.Tensors, func(s TensorStats) bool { return strings.Contains(s.Skipped, tt.unreadSub) }) {
				t.Errorf("kv_b_proj not said skipped for %q: %+v", tt.unreadSub, rep.Tensors)
			}
		})
	}
}
