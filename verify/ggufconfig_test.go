package verify

import (
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	w "github.com/ckptcheck/ckptcheck/internal/ggufwrite"
)

// withKV sets metadata keys of a GGUF fixture, replacing those it has.
func withKV(f w.File, kvs ...w.KV) w.File {
	f.KV = slices.Clone(f.KV)
	for _, kv := range kvs {
		if i := slices.IndexFunc(f.KV, func(o w.KV) bool { return o.Key == kv.Key }); i >= 0 {
			f.KV[i] = kv
		} else {
			f.KV = append(f.KV, kv)
		}
	}
	return f
}

func tinyTokens(n int) w.Value {
	toks := make([]string, n)
	for i := range toks {
		toks[i] = "t" + strconv.Itoa(i)
	}
	return w.Strings(toks...)
}

func TestGGUFConfigMismatch(t *testing.T) {
	ts := tinyLlama()
	config := map[string]any{"model_type": "llama", "architectures": []string{"LlamaForCausalLM"},
		"hidden_size": tinyHidden, "num_attention_heads": tinyHeads, "num_key_value_heads": tinyKV,
		"num_hidden_layers": 2, "intermediate_size": tinyFF, "vocab_size": tinyVocab, "tie_word_embeddings": true,
		"torch_dtype": "float32", "max_position_embeddings": 2048, "rope_theta": 500000.0, "rms_norm_eps": 1e-5}
	// The metadata convert_hf_to_gguf writes from config beside what
	// tinyGGUFOf has.
	agreeing := []w.KV{w.P("llama.feed_forward_length", w.U32(tinyFF)), w.P("llama.context_length", w.U32(2048)),
		w.P("llama.rope.freq_base", w.F32(500000)), w.P("llama.attention.layer_norm_rms_epsilon", w.F32(1e-5)),
		w.P("tokenizer.ggml.tokens", tinyTokens(tinyVocab))}
	tests := []struct {
		name   string
		config map[string]any // replaces fields of config; nil deletes one
		kv     []w.KV
		want   []string // "severity key published exported"
	}{
		{"agreeing", nil, nil, nil},
		{"head count", nil, []w.KV{w.P("llama.attention.head_count", w.U32(4))}, []string{"error num_attention_heads 2 4"}},
		{"kv heads defaulted", map[string]any{"num_key_value_heads": nil}, nil, []string{"error num_key_value_heads 2 1"}},
		{"block count", nil, []w.KV{w.P("llama.block_count", w.U32(3))}, []string{"error num_hidden_layers 2 3"}},
		{"MLA written as MQA", nil, []w.KV{w.P("llama.attention.head_count_kv", w.U32(1)), w.P("llama.attention.kv_lora_rank", w.U32(16))}, nil},
		{"MLA kv heads still checked", map[string]any{"num_key_value_heads": 1}, []w.KV{w.P("llama.attention.head_count_kv", w.U32(2)),
			w.P("llama.attention.kv_lora_rank", w.U32(16))}, []string{"error num_key_value_heads 1 2"}},
		{"NextN layers counted as blocks", nil, []w.KV{w.P("llama.block_count", w.U32(3)), w.P("llama.nextn_predict_layers", w.U32(1))}, nil},
		{"rope base", nil, []w.KV{w.P("llama.rope.freq_base", w.F32(10000))}, []string{"warning rope_theta 500000 10000"}},
		{"rope base in rope_parameters", map[string]any{"rope_theta": nil, "rope_parameters": map[string]any{"rope_type": "default", "rope_theta": 10000.0}},
			nil, []string{"warning rope_theta 10000 500000"}},
		{"norm epsilon", nil, []w.KV{w.P("llama.attention.layer_norm_rms_epsilon", w.F32(1e-6))}, []string{"warning rms_norm_eps 0.00001 1e-06"}},
		{"NaN epsilon stays JSON", nil, []w.KV{w.P("llama.attention.layer_norm_rms_epsilon", w.F32(float32(math.NaN())))}, []string{`warning rms_norm_eps 0.00001 "NaN"`}},
		{"vocabulary", nil, []w.KV{w.P("tokenizer.ggml.tokens", tinyTokens(tinyVocab+1))}, []string{"warning vocab_size 32 33"}},
		{"vocab_size key wins", nil, []w.KV{w.P("llama.vocab_size", w.U32(64))}, []string{"warning vocab_size 32 64"}},
		{"missing config fields are silent", map[string]any{"rope_theta": nil, "rms_norm_eps": nil, "max_position_embeddings": nil}, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := maps.Clone(config)
			for k, v := range tt.config {
				if v == nil {
					delete(cfg, k)
				} else {
					cfg[k] = v
				}
			}
			pub := export(t, tinyFixture(ts), cfg)
			exp := filepath.Join(t.TempDir(), "model.gguf")
			f := withKV(withKV(tinyGGUFOf(ts, ggufEdit{}), agreeing...), tt.kv...)
			must(t, os.WriteFile(exp, f.Bytes(), 0o644))
			d := diffPaths(t, pub, exp, DiffOptions{WeightsOnly: true})
			var got []string
			for _, f := range d.Findings {
				if f.Code == CodeGGUFConfigMismatch {
					got = append(got, f.Severity.String()+" "+f.Key+" "+jsonText(f.Published)+" "+jsonText(f.Exported))
					if f.File != exp || f.Message == "" {
						t.Errorf("file %q, message %q", f.File, f.Message)
					}
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
