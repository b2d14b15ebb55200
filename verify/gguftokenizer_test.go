package verify

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
	w "github.com/ckptcheck/ckptcheck/internal/ggufwrite"
)

// The tokenizer a GGUF embeds against the published tokenizer files: a
// faithful conversion passes; a vocabulary of another size, a special
// token id naming another token (or none), a changed or dropped chat
// template is tokenizer_changed, keyed by what changed.
func TestGGUFTokenizerChanged(t *testing.T) {
	ts := tinyLlama()
	const template = "{% for m in messages %}{{ m.content }}{% endfor %}"
	vocab := map[string]int{}
	tokens := make([]string, 0, tinyVocab)
	for i := range tinyVocab - 2 {
		vocab["t"+strconv.Itoa(i)] = i
		tokens = append(tokens, "t"+strconv.Itoa(i))
	}
	tokens = append(tokens, "<s>", "</s>")
	tokenizer := map[string]any{"version": "1.0",
		"added_tokens": []map[string]any{{"id": tinyVocab - 2, "content": "<s>", "special": true}, {"id": tinyVocab - 1, "content": "</s>", "special": true}},
		"model":        map[string]any{"type": "BPE", "vocab": vocab, "merges": []string{}}}
	faithful := []w.KV{w.P("tokenizer.ggml.model", w.Str("gpt2")), w.P("tokenizer.ggml.tokens", w.Strings(tokens...)),
		w.P("tokenizer.ggml.bos_token_id", w.U32(tinyVocab-2)), w.P("tokenizer.ggml.eos_token_id", w.U32(tinyVocab-1)),
		w.P("tokenizer.ggml.pad_token_id", w.U32(0)), w.P("tokenizer.chat_template", w.Str(template))}
	config := map[string]any{"model_type": "llama", "hidden_size": tinyHidden, "num_attention_heads": tinyHeads, "num_key_value_heads": tinyKV,
		"num_hidden_layers": 2, "vocab_size": tinyVocab, "tie_word_embeddings": true, "pad_token_id": 0}
	tests := []struct {
		name    string
		jinja   bool // the published template in chat_template.jinja, not tokenizer_config.json
		kv      []w.KV
		without string // a key the GGUF leaves out
		want    []string
	}{
		{name: "faithful"},
		{name: "template moved to chat_template.jinja", jinja: true},
		{name: "template changed", kv: []w.KV{w.P("tokenizer.chat_template", w.Str(template+"\n"))}, want: []string{"chat_template"}},
		{name: "template dropped", without: "tokenizer.chat_template", want: []string{"chat_template"}},
		{name: "eos id", kv: []w.KV{w.P("tokenizer.ggml.eos_token_id", w.U32(tinyVocab-2))}, want: []string{"eos_token"}},
		{name: "eos id past the vocabulary", kv: []w.KV{w.P("tokenizer.ggml.eos_token_id", w.U32(1<<30))}, want: []string{"eos_token"}},
		{name: "eos id dropped", without: "tokenizer.ggml.eos_token_id", want: []string{"eos_token"}},
		{name: "pad id against config.json", kv: []w.KV{w.P("tokenizer.ggml.pad_token_id", w.U32(3))}, want: []string{"pad_token"}},
		{name: "vocabulary size", kv: []w.KV{w.P("tokenizer.ggml.tokens", w.Strings(append(slices.Clone(tokens), "extra")...))}, want: []string{"tokenizer.ggml.tokens"}},
		{name: "eos token renamed", kv: []w.KV{w.P("tokenizer.ggml.tokens", w.Strings(append(slices.Clone(tokens[:tinyVocab-1]), "<|end|>")...))}, want: []string{"eos_token"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pub := export(t, tinyFixture(ts), config)
			must(t, fixture.WriteJSON(filepath.Join(pub, "tokenizer.json"), tokenizer))
			tc := map[string]any{"bos_token": "<s>", "eos_token": map[string]any{"content": "</s>", "special": true}}
			if tt.jinja {
				must(t, os.WriteFile(filepath.Join(pub, "chat_template.jinja"), []byte(template), 0o644))
			} else {
				tc["chat_template"] = template
			}
			must(t, fixture.WriteJSON(filepath.Join(pub, "tokenizer_config.json"), tc))
			f := withKV(withKV(tinyGGUFOf(ts, ggufEdit{}), faithful...), tt.kv...)
			f.KV = slices.DeleteFunc(f.KV, func(kv w.KV) bool { return kv.Key == tt.without })
			exp := filepath.Join(t.TempDir(), "model.gguf")
			must(t, os.WriteFile(exp, f.Bytes(), 0o644))
			d := diffPaths(t, pub, exp, DiffOptions{})
			var got []string
			for _, f := range d.Findings {
				if f.Code == CodeTokenizerChanged {
					got = append(got, f.Key)
					if f.Severity != Warning || f.Message == "" || f.File == "" {
						t.Errorf("%s: %s %q in %q", f.Key, f.Severity, f.Message, f.File)
					}
					t.Logf("%s: %s", f.Key, f.Message)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("tokenizer_changed on %q, want %q", got, tt.want)
			}
		})
	}
}
