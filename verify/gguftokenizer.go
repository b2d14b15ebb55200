package verify

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ckptcheck/ckptcheck/checkpoint"
	"github.com/ckptcheck/ckptcheck/gguf"
)

// The tokenizer a GGUF file embeds, against the published files it was
// converted from. convert_hf_to_gguf.py writes it through gguf-py's
// vocab.py (ggml-org/llama.cpp @ 0024aa74): tokenizer.ggml.tokens, the
// vocabulary padded to config.json's vocab_size; SpecialVocab's
// tokenizer.ggml.<type>_token_id, the id of tokenizer_config.json's
// <type>_token among tokenizer.json's added tokens, else config.json's
// <type>_token_id; and tokenizer.chat_template(.<name>), the published
// template as it is.

// ggufSpecialTypes are SpecialVocab.special_token_types.
var ggufSpecialTypes = []string{"bos", "eos", "unk", "sep", "pad", "cls", "mask"}

// ggufTemplateKey is the chat template's key; named templates follow it
// after a dot.
const ggufTemplateKey = "tokenizer.chat_template"

// ggufTokenizerChanges compares a GGUF export's embedded tokenizer with the
// published files p (tokenizer.json, tokenizer_config.json or
// special_tokens_map.json, config.json, the chat template): a vocabulary of
// another size, a special token id naming another token, or a chat
// template changed is tokenizer_changed (warning). Only counts and the
// special tokens' strings are compared: the token array the header holds
// is indexed, never copied.
func ggufTokenizerChanges(ctx context.Context, p *companions, exp *checkpoint.Checkpoint) ([]Finding, error) {
	f, path := ggufMetaShard(exp)
	if f == nil {
		return nil, nil
	}
	pub := p.c
	var tokens []string
	if v, ok := f.Lookup("tokenizer.ggml.tokens"); ok {
		tokens, _ = v.Strings()
	}
	warn := func(key, msg string, published, exported any) Finding {
		return Finding{Code: CodeTokenizerChanged, Severity: Warning, File: path, Key: key, Message: msg, Published: published, Exported: exported}
	}
	var out []Finding
	vocab, added, err := publishedVocabulary(ctx, p)
	if err != nil {
		return nil, err
	}
	cfg := parsedConfig(pub)
	if tokens != nil && vocab > 0 {
		padded, hasPadded := uint64(0), false
		if cfg != nil {
			padded, hasPadded = cfg.Ints["vocab_size"]
		}
		if n := uint64(len(tokens)); n != vocab && (!hasPadded || n != padded) {
			msg := fmt.Sprintf("the GGUF's tokenizer holds %d tokens; the published tokenizer.json %d", n, vocab)
			if hasPadded {
				msg += fmt.Sprintf(" (config.json vocab_size %d)", padded)
			}
			out = append(out, warn("tokenizer.ggml.tokens", msg, vocab, n))
		}
	}
	special, err := publishedSpecialTokens(ctx, p)
	if err != nil {
		return nil, err
	}
	for _, typ := range ggufSpecialTypes {
		key := "tokenizer.ggml." + typ + "_token_id"
		want := special[typ+"_token"]
		v, ok := f.Lookup(key)
		id, idOK := v.Uint()
		switch {
		case !ok && want != "" && slices.Contains(added, want):
			// The converter would have found it among the added tokens.
			out = append(out, warn(typ+"_token", fmt.Sprintf("the GGUF has no %s; the published %s_token is %q", key, typ, want), want, nil))
		case !ok:
		case !idOK || id >= uint64(len(tokens)) && tokens != nil:
			out = append(out, warn(typ+"_token", fmt.Sprintf("the GGUF's %s %s names no token of its %d", key, v, len(tokens)), want, v.String()))
		case want != "" && tokens != nil && tokens[id] != want:
			out = append(out, warn(typ+"_token", fmt.Sprintf("the GGUF's %s is %d, %q; the published %s_token is %q", key, id, tokens[id], typ, want), want, tokens[id]))
		case want == "" && cfg != nil:
			if cid, ok := cfg.Ints[typ+"_token_id"]; ok && cid != id {
				out = append(out, warn(typ+"_token", fmt.Sprintf("the GGUF's %s is %d; config.json %s_token_id is %d", key, id, typ, cid), cid, id))
			}
		}
	}
	if _, hasConfig := p.files["tokenizer_config.json"]; hasConfig || publishedHasTemplateFile(p) {
		a, err := p.chatTemplate(ctx)
		if err != nil {
			return nil, err
		}
		name := ""
		for _, s := range exp.Shards {
			if s.Path == path {
				name = s.Name
			}
		}
		fs := compareChatTemplates(newCompanions(exp, nil), a, ggufChatTemplate(f, name))
		for i := range fs {
			fs[i].File = path // the GGUF file, also when the export was given as its folder
		}
		out = append(out, fs...)
	}
	return out, nil
}

// publishedHasTemplateFile reports a chat template file of its own.
func publishedHasTemplateFile(p *companions) bool {
	_, jinja := p.files["chat_template.jinja"]
	_, json := p.files["chat_template.json"]
	return jinja || json
}

// publishedVocabulary is the size of the published tokenizer.json's
// vocabulary (its model's entries, or past them the highest added token's
// id plus one) and the added tokens' contents; 0 when there is no usable
// tokenizer.json.
func publishedVocabulary(ctx context.Context, p *companions) (uint64, []string, error) {
	if _, ok := p.files["tokenizer.json"]; !ok {
		return 0, nil, nil
	}
	r, done, err := p.stream(ctx, "tokenizer.json")
	if errors.Is(err, errTooLargeToShow) {
		return 0, nil, nil
	}
	if err != nil {
		return 0, nil, err
	}
	tf, err := summariseTokenizer(r)
	done()
	if errors.Is(err, errNotJSON) {
		return 0, nil, nil
	}
	if err != nil {
		return 0, nil, err
	}
	n := uint64(0)
	if v, ok := tf.model["vocab"]; ok {
		n = uint64(v.count)
	}
	var contents []string
	for id, c := range addedTokensList(tf.sections["added_tokens"]) {
		if i, err := strconv.ParseUint(id, 10, 64); err == nil && i < 1<<32 {
			n = max(n, i+1)
		}
		contents = append(contents, c)
	}
	slices.Sort(contents)
	return n, contents, nil
}

// publishedSpecialTokens are the special tokens' texts by field
// ("eos_token": "<|im_end|>"), tokenizer_config.json's over
// special_tokens_map.json's, as SpecialVocab reads them.
func publishedSpecialTokens(ctx context.Context, p *companions) (map[string]string, error) {
	out := map[string]string{}
	for _, name := range []string{"special_tokens_map.json", "tokenizer_config.json"} {
		m, _, err := p.object(ctx, name)
		if err != nil {
			return nil, err
		}
		for _, typ := range ggufSpecialTypes {
			if s, ok := tokenContent(m[typ+"_token"]).(string); ok {
				out[typ+"_token"] = s
			}
		}
	}
	return out, nil
}

// ggufChatTemplate is the GGUF's chat template(s) as a side's effective
// template, nil when it has none: tokenizer.chat_template is "default",
// tokenizer.chat_template.<name> a named one.
func ggufChatTemplate(f *gguf.File, source string) *chatTemplate {
	t := &chatTemplate{source: source, templates: map[string]string{}}
	for _, kv := range f.KV {
		name, ok := "default", kv.Key == ggufTemplateKey
		if n, named := strings.CutPrefix(kv.Key, ggufTemplateKey+"."); named && n != "" {
			name, ok = n, true
		}
		if s, isStr := kv.Value.Str(); ok && isStr {
			t.templates[name] = s
		}
	}
	if len(t.templates) == 0 {
		return nil
	}
	return t
}
