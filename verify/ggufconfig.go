package verify

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/ckptcheck/ckptcheck/checkpoint"
	"github.com/ckptcheck/ckptcheck/gguf"
)

// A ggufConfigKey is a GGUF metadata key convert_hf_to_gguf writes from a
// config.json field: TextModel.set_gguf_parameters in
// ggml-org/llama.cpp convert_hf_to_gguf.py @ a458664f, key names from
// gguf-py/gguf/constants.py @ 0024aa74 (Keys.LLM, Keys.Attention,
// Keys.Rope). sev is Error where llama.cpp builds another graph from the
// value (layers, widths, heads), Warning where it runs the same graph
// differently.
type ggufConfigKey struct {
	key, field string // key after "<arch>."
	sev        Severity
	float      bool // written as F32: compared after rounding to float32
}

var ggufConfigKeys = []ggufConfigKey{
	{key: "block_count", field: "num_hidden_layers", sev: Error},
	{key: "embedding_length", field: "hidden_size", sev: Error},
	{key: "feed_forward_length", field: "intermediate_size", sev: Warning},
	{key: "attention.head_count", field: "num_attention_heads", sev: Error},
	{key: "attention.head_count_kv", field: "num_key_value_heads", sev: Error},
	{key: "context_length", field: "max_position_embeddings", sev: Warning},
	{key: "rope.freq_base", field: "rope_theta", sev: Warning, float: true},
	{key: "attention.layer_norm_rms_epsilon", field: "rms_norm_eps", sev: Warning, float: true},
}

// ggufConfigMismatches compares the metadata of a GGUF export with the
// published config.json it was converted from: gguf_config_mismatch for
// each value that differs, keyed by the config field, with both values.
// A key or field either side leaves out is not compared.
func ggufConfigMismatches(pub *checkpoint.Config, exp *checkpoint.Checkpoint) []Finding {
	f, path := ggufMetaShard(exp)
	if pub == nil || f == nil {
		return nil
	}
	arch := f.Architecture()
	var out []Finding
	add := func(sev Severity, key, field, want, got string) {
		out = append(out, Finding{Code: CodeGGUFConfigMismatch, Severity: sev, Key: field, File: path,
			Message:   fmt.Sprintf("config.json %s is %s, but the GGUF's %s is %s", field, want, key, got),
			Published: numberOrText(want), Exported: numberOrText(got)})
	}
	for _, k := range ggufConfigKeys {
		key := arch + "." + k.key
		got, ok := f.Lookup(key)
		if !ok {
			continue
		}
		if k.float {
			raw, ok := configField(pub, k.field)
			want, err := strconv.ParseFloat(string(bytes.TrimSpace(raw)), 64)
			g, gok := got.Float()
			if ok && err == nil && gok && float32(want) != float32(g) {
				add(k.sev, key, k.field, string(bytes.TrimSpace(raw)), got.String())
			}
			continue
		}
		// Ints holds num_key_value_heads as transformers defaults it.
		want, ok := pub.Ints[k.field]
		if g, gok := got.Uint(); ok && gok && g != want && !convertedOnPurpose(f, k.key, want, g) {
			add(k.sev, key, k.field, utoa(want), utoa(g))
		}
	}
	if want, ok := pub.Ints["vocab_size"]; ok {
		if got, key, ok := ggufVocabSize(f); ok && got != want {
			add(Warning, key, "vocab_size", utoa(want), utoa(got))
		}
	}
	return out
}

// convertedOnPurpose reports a GGUF value the converter changes from
// config.json on purpose (convert_hf_to_gguf.py @ a458664f): MLA models
// (DeepseekV2Model, KimiLinearModel…) are written as MQA, head_count_kv 1,
// and GLM-4.5 and others count their NextN (MTP) layers as blocks.
func convertedOnPurpose(f *gguf.File, key string, want, got uint64) bool {
	arch := f.Architecture()
	switch key {
	case "attention.head_count_kv":
		_, mla := f.Lookup(arch + ".attention.kv_lora_rank")
		return mla && got == 1
	case "block_count":
		v, ok := f.Lookup(arch + ".nextn_predict_layers")
		n, nok := v.Uint()
		return ok && nok && got == want+n
	}
	return false
}

// ggufVocabSize is <arch>.vocab_size, else the length of
// tokenizer.ggml.tokens (which the converter pads to vocab_size), with the
// key it came from.
func ggufVocabSize(f *gguf.File) (uint64, string, bool) {
	key := f.Architecture() + ".vocab_size"
	if v, ok := f.Lookup(key); ok {
		n, ok := v.Uint()
		return n, key, ok
	}
	key = "tokenizer.ggml.tokens"
	if v, ok := f.Lookup(key); ok && v.Type == gguf.ValueArray {
		return uint64(v.Len()), key + " length", true
	}
	return 0, "", false
}

// numberOrText is s as a JSON number, or as a string when it is none (a
// GGUF float that is NaN or infinite), so that reports stay JSON.
func numberOrText(s string) any {
	if json.Valid([]byte(s)) {
		return json.Number(s)
	}
	return s
}

func utoa(n uint64) string { return strconv.FormatUint(n, 10) }

// ggufMetaShard is the first GGUF shard of a checkpoint that names its
// architecture (the first of a split holds the metadata), and its path.
func ggufMetaShard(c *checkpoint.Checkpoint) (*gguf.File, string) {
	for _, s := range c.Shards {
		if f, ok := s.Header.(*gguf.File); ok && f.Architecture() != "" {
			return f, s.Path
		}
	}
	return nil, ""
}

// configField is a config.json field as written: top-level, else in
// text_config, else (rope_theta in transformers v5) in rope_parameters.
func configField(c *checkpoint.Config, field string) (json.RawMessage, bool) {
	if v, ok := c.Fields[field]; ok && string(v) != "null" {
		return v, true
	}
	for _, sub := range []string{"text_config", "rope_parameters"} {
		var m map[string]json.RawMessage
		if raw, ok := c.Fields[sub]; ok && json.Unmarshal(raw, &m) == nil {
			if v, ok := m[field]; ok && string(v) != "null" {
				return v, true
			}
		}
	}
	return nil, false
}
