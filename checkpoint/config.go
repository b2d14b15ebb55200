package checkpoint

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
)

// Config is what a checkpoint's config.json says about the model, read the
// way transformers reads it (v4 and v5 names both understood). Fields the
// file leaves out are zero.
type Config struct {
	// Name is the file's name in the checkpoint, Path how reports name it.
	Name, Path string
	// Fields holds the top-level fields as written, for comparing two
	// configs field by field: all of them, or the first MaxConfigFields
	// when the file has more.
	Fields map[string]json.RawMessage
	// UnreadFields counts the top-level members after the first
	// MaxConfigFields fields, which are not read.
	UnreadFields int

	ModelType         string
	VocabSize         uint64
	HiddenSize        uint64
	NumHiddenLayers   uint64
	NumAttentionHeads uint64
	// NumKeyValueHeads is num_key_value_heads, or num_attention_heads when
	// absent, as transformers defaults it.
	NumKeyValueHeads uint64
	// HeadDim is head_dim, or hidden_size / num_attention_heads when absent
	// or null.
	HeadDim uint64
	// TieWordEmbeddings is tie_word_embeddings as written; nil when absent
	// (the model class's default then applies).
	TieWordEmbeddings *bool
	// DType is "dtype" as transformers v5 writes it, else the older
	// "torch_dtype": when both are present v5 keeps dtype
	// (src/transformers/configuration_utils.py @ 008e5743, "If both are
	// provided, keep `dtype`").
	DType string
	// Quantized is set when the config has a quantization_config: stored
	// dtypes then differ from DType on purpose.
	Quantized bool
	// Ints holds every non-negative integer field below 2^63, from
	// text_config too (top-level fields win): what adapter rules compute with.
	Ints map[string]uint64
	// Problems names fields of the wrong type ("vocab_size is a string"),
	// which are otherwise ignored.
	Problems []string
}

// MaxConfigFields bounds the top-level fields of config.json (and of its
// text_config) that are read: real configs have a few hundred at most, and
// a million fields read into maps would take hundreds of MB. The rest are
// counted, not read.
const MaxConfigFields = 10_000

// maxConfigInt bounds the integers adapter expressions see, so that their
// arithmetic cannot overflow on a hostile config.
const maxConfigInt = math.MaxInt64

// ParseConfig parses config.json's bytes. Bytes that are not a JSON
// object are an error, and the Config nil; fields of the wrong type are
// not: they are named in the Config's Problems.
func ParseConfig(b []byte) (*Config, error) {
	c := &Config{}
	var err error
	if c.Fields, c.UnreadFields, err = readObject(b, MaxConfigFields); err != nil {
		return nil, err
	}
	// Multimodal configs nest the language model's fields in text_config.
	var text map[string]json.RawMessage
	if raw, ok := c.Fields["text_config"]; ok && string(raw) != "null" {
		if text, _, err = readObject(raw, MaxConfigFields); err != nil {
			c.Problems = append(c.Problems, "text_config is "+kindOf(raw)+", not an object")
		}
	}
	lookup := func(key string) (json.RawMessage, bool) {
		if v, ok := c.Fields[key]; ok {
			return v, true
		}
		v, ok := text[key]
		return v, ok
	}
	str := func(key string, dst *string) {
		v, ok := lookup(key)
		if !ok || string(v) == "null" {
			return
		}
		if json.Unmarshal(v, dst) != nil {
			c.Problems = append(c.Problems, fmt.Sprintf("%s is %s, not a string", key, kindOf(v)))
		}
	}
	uint := func(key string, dst *uint64) {
		v, ok := lookup(key)
		if !ok || string(v) == "null" {
			return
		}
		n, err := strconv.ParseUint(string(bytes.TrimSpace(v)), 10, 64)
		if err != nil {
			c.Problems = append(c.Problems, fmt.Sprintf("%s is %s, not a non-negative integer", key, kindOf(v)))
			return
		}
		*dst = n
	}
	str("model_type", &c.ModelType)
	uint("vocab_size", &c.VocabSize)
	uint("hidden_size", &c.HiddenSize)
	uint("num_hidden_layers", &c.NumHiddenLayers)
	uint("num_attention_heads", &c.NumAttentionHeads)
	uint("num_key_value_heads", &c.NumKeyValueHeads)
	uint("head_dim", &c.HeadDim)
	if v, ok := lookup("tie_word_embeddings"); ok && string(v) != "null" {
		var tied bool
		if json.Unmarshal(v, &tied) != nil {
			c.Problems = append(c.Problems, fmt.Sprintf("tie_word_embeddings is %s, not true or false", kindOf(v)))
		} else {
			c.TieWordEmbeddings = &tied
		}
	}
	str("dtype", &c.DType)
	if c.DType == "" {
		str("torch_dtype", &c.DType)
	}
	if v, ok := c.Fields["quantization_config"]; ok && string(v) != "null" {
		c.Quantized = true
	}
	if _, ok := lookup("num_key_value_heads"); !ok {
		c.NumKeyValueHeads = c.NumAttentionHeads
	}
	if v, ok := lookup("head_dim"); (!ok || string(v) == "null") && c.NumAttentionHeads > 0 && c.HiddenSize%c.NumAttentionHeads == 0 {
		c.HeadDim = c.HiddenSize / c.NumAttentionHeads
	}
	c.Ints = make(map[string]uint64)
	for _, fields := range []map[string]json.RawMessage{text, c.Fields} {
		for k := range fields {
			// A top-level field wins over text_config's, also when it is
			// not an integer: the typed fields read it so too.
			v, _ := lookup(k)
			if n, err := strconv.ParseUint(string(v), 10, 64); err == nil && n <= maxConfigInt {
				c.Ints[k] = n
			}
		}
	}
	// Derived values as transformers computes them, where the file is silent.
	for k, v := range map[string]uint64{"num_key_value_heads": c.NumKeyValueHeads, "head_dim": c.HeadDim} {
		if _, ok := c.Ints[k]; !ok && v > 0 && v <= maxConfigInt {
			c.Ints[k] = v
		}
	}
	slices.Sort(c.Problems)
	return c, nil
}

// readObject reads the members of the JSON object b, as json.Unmarshal
// into a map would (a repeated key keeps its last value), but at most max
// distinct keys: the members of other keys after those are counted in
// unread and not kept, so that the memory taken is bounded by max, not by
// the number of members.
func readObject(b []byte, max int) (fields map[string]json.RawMessage, unread int, err error) {
	if t := bytes.TrimSpace(b); !json.Valid(t) || len(t) == 0 || t[0] != '{' {
		var m map[string]json.RawMessage
		return nil, 0, notObject(b, json.Unmarshal(b, &m))
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if _, err := dec.Token(); err != nil { // the opening brace
		return nil, 0, notObject(b, err)
	}
	fields = make(map[string]json.RawMessage)
	var skipped json.RawMessage // reused for the values not kept
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, 0, notObject(b, err)
		}
		key, _ := tok.(string)
		if _, seen := fields[key]; !seen && len(fields) >= max {
			if err := dec.Decode(&skipped); err != nil {
				return nil, 0, notObject(b, err)
			}
			unread++
			continue
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, 0, notObject(b, err)
		}
		fields[key] = v
	}
	return fields, unread, nil
}

// notObject says why config.json is not a JSON object, without Go's type
// names.
func notObject(b []byte, err error) error {
	if !json.Valid(b) {
		var se *json.SyntaxError
		if e, ok := err.(*json.SyntaxError); ok {
			se = e
			return fmt.Errorf("not JSON: %s (at byte %d)", se.Error(), se.Offset)
		}
		return fmt.Errorf("not JSON")
	}
	return fmt.Errorf("a JSON %s, not an object", kindOf(bytes.TrimSpace(b)))
}

// kindOf names a JSON value's type for messages: `a string ("32000")`.
func kindOf(v []byte) string {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return "empty"
	}
	quoted := string(v)
	if len(quoted) > 40 {
		quoted = quoted[:37] + "..."
	}
	switch c := v[0]; {
	case c == '"':
		return "a string (" + quoted + ")"
	case c == '{':
		return "an object"
	case c == '[':
		return "an array"
	case c == 't' || c == 'f':
		return "a boolean (" + quoted + ")"
	case c == 'n':
		return "null"
	case c == '-' || (c >= '0' && c <= '9'):
		return "the number " + quoted
	}
	return "not JSON"
}
