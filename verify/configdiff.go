package verify

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/ckptcheck/ckptcheck/checkpoint"
	"github.com/ckptcheck/ckptcheck/internal/textfmt"
)

// Comparing config.json field by field. transformers v5 renamed fields
// that v4 wrote, so an export saved by v5 from a v4 checkpoint differs in
// names only; both sides are normalised to v5's form first
// (transformers src/transformers/modeling_rope_utils.py,
// RotaryEmbeddingConfigMixin.convert_rope_params_to_dict and
// standardize_rope_params, and configuration_utils.py's dtype):
//
//   - torch_dtype is dtype ("torch.bfloat16" is "bfloat16");
//   - rope_scaling is rope_parameters, with type as rope_type (default
//     "default"), the top-level rope_theta and partial_rotary_factor moved
//     inside, and for llama3, yarn and longrope an
//     original_max_position_embeddings (the top-level one, else
//     max_position_embeddings);
//   - rope_parameters keyed by layer type (every key a value of
//     layer_types: {"full_attention": {...}, "sliding_attention": {...}})
//     get the same defaults per layer type; a flat one compared with a
//     per-layer-type one applies to every layer type, except that Gemma 3's
//     rope_local_base_freq is the sliding layers' rope_theta;
//   - sub-configs (text_config, vision_config, ...) are normalised alike.
//
// Bookkeeping is ignored (transformers_version, _name_or_path), and a field
// set to null is the same as a field left out.

// ignoredConfigFields are bookkeeping: they change with every save.
var ignoredConfigFields = sync.OnceValue(func() map[string]bool {
	return map[string]bool{"transformers_version": true, "_name_or_path": true, "_commit_hash": true}
})

// tokenIDFields are the special token ids; a change is tokenizer_changed.
var tokenIDFields = sync.OnceValue(func() map[string]bool {
	return map[string]bool{"eos_token_id": true, "bos_token_id": true, "pad_token_id": true}
})

// decodeFields decodes config.json's top-level fields (only those in
// only, when it is not nil), numbers kept as written.
func decodeFields(raw map[string]json.RawMessage, only map[string]bool) map[string]any {
	out := make(map[string]any, min(len(raw), len(only)+1))
	for k, v := range raw {
		if only != nil && !only[k] {
			continue
		}
		if x, ok := decodeValue(v); ok {
			out[k] = x
		}
	}
	return out
}

// decodeValue decodes one JSON value, numbers kept as written; a number
// or string without a decoder of its own (a config of a million fields is
// decoded one field at a time). A number out of float64's range takes the
// decoder, which keeps it as written.
func decodeValue(v json.RawMessage) (any, bool) {
	t := bytes.TrimSpace(v)
	if len(t) > 0 && (t[0] == '-' || t[0] >= '0' && t[0] <= '9' || t[0] == '"') {
		var x any
		if json.Unmarshal(t, &x) == nil {
			if _, isNumber := x.(float64); isNumber {
				return json.Number(t), true
			}
			return x, true
		}
	}
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	var x any
	return x, dec.Decode(&x) == nil
}

// normaliseConfig rewrites a decoded config (v4 or v5) in v5's form, in
// place, and returns it.
func normaliseConfig(c map[string]any) map[string]any {
	for k := range c {
		if ignoredConfigFields()[k] || c[k] == nil {
			delete(c, k)
		}
	}
	if v, ok := c["torch_dtype"]; ok {
		if _, has := c["dtype"]; !has {
			c["dtype"] = v
		}
		delete(c, "torch_dtype")
	}
	if s, ok := c["dtype"].(string); ok {
		c["dtype"] = strings.TrimPrefix(s, "torch.")
	}
	normaliseRope(c)
	for k, v := range c {
		if sub, ok := v.(map[string]any); ok && strings.HasSuffix(k, "_config") && k != "quantization_config" {
			c[k] = normaliseConfig(sub)
		}
	}
	return c
}

func normaliseRope(c map[string]any) {
	rp, _ := c["rope_scaling"].(map[string]any)
	if rp == nil {
		rp, _ = c["rope_parameters"].(map[string]any)
	}
	theta, hasTheta := c["rope_theta"]
	if rp == nil && !hasTheta {
		return
	}
	if rp == nil {
		rp = map[string]any{}
	}
	prf, hasPRF := c["partial_rotary_factor"]
	delete(c, "rope_scaling")
	delete(c, "rope_theta")
	delete(c, "partial_rotary_factor")
	fill := func(p map[string]any, nested bool) {
		if _, ok := p["rope_type"]; !ok {
			if t, ok := p["type"]; ok {
				p["rope_type"] = t
			} else {
				p["rope_type"] = "default"
			}
		}
		delete(p, "type")
		if _, ok := p["rope_theta"]; !ok && hasTheta {
			p["rope_theta"] = theta
		}
		if hasPRF {
			p["partial_rotary_factor"] = prf
		}
		switch p["rope_type"] {
		case "llama3", "yarn", "longrope":
			if omp, ok := c["original_max_position_embeddings"]; ok && !nested {
				p["original_max_position_embeddings"] = omp
			} else if _, ok := p["original_max_position_embeddings"]; !ok && c["max_position_embeddings"] != nil {
				p["original_max_position_embeddings"] = c["max_position_embeddings"]
			}
		}
	}
	if nestedRope(rp, c) {
		for _, k := range slices.Sorted(maps.Keys(rp)) {
			if sub, ok := rp[k].(map[string]any); ok {
				fill(sub, true)
			}
		}
	} else {
		fill(rp, false)
	}
	c["rope_parameters"] = rp
}

// nestedRope reports whether rope parameters are keyed by layer type.
func nestedRope(rp, c map[string]any) bool {
	types, ok := c["layer_types"].([]any)
	if !ok || len(rp) == 0 {
		return false
	}
	for k := range rp {
		if !slices.Contains(types, any(k)) {
			return false
		}
	}
	return true
}

// alignRope makes a flat rope_parameters per layer type when the other
// side's is keyed by layer type, so that they compare key by key.
func alignRope(flat, nested map[string]any) {
	frp, _ := flat["rope_parameters"].(map[string]any)
	nrp, _ := nested["rope_parameters"].(map[string]any)
	if frp == nil || nrp == nil || nestedRope(frp, flat) || !nestedRope(nrp, nested) {
		return
	}
	per := make(map[string]any, len(nrp))
	for k := range nrp {
		p := maps.Clone(frp)
		if local, ok := flat["rope_local_base_freq"]; ok && k == "sliding_attention" {
			p = map[string]any{"rope_type": "default", "rope_theta": local}
		}
		per[k] = p
	}
	delete(flat, "rope_local_base_freq")
	flat["rope_parameters"] = per
}

// A fieldChange is one field that differs between two JSON objects; a
// side without the field has ok false.
type fieldChange struct {
	path         string
	pub, exp     any
	pubOK, expOK bool
}

// diffJSON lists the fields of two decoded objects that differ, recursing
// into objects (paths joined with "."); arrays and scalars are compared
// whole, numbers by value. null is the same as absent.
func diffJSON(prefix string, a, b map[string]any) []fieldChange {
	var out []fieldChange
	for _, k := range unionKeys(a, b) {
		out = diffKey(out, prefix, k, a, b)
	}
	return out
}

// unionKeys are the keys of a and b, sorted.
func unionKeys(a, b map[string]any) []string {
	keys := slices.Sorted(maps.Keys(a))
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// diffKey appends the changes of one field of two decoded objects.
func diffKey(out []fieldChange, prefix, k string, a, b map[string]any) []fieldChange {
	av, aok := a[k]
	bv, bok := b[k]
	aok, bok = aok && av != nil, bok && bv != nil
	path := prefix + k
	am, aIsObj := av.(map[string]any)
	bm, bIsObj := bv.(map[string]any)
	switch {
	case !aok && !bok:
	case aIsObj && bIsObj:
		out = append(out, diffJSON(path+".", am, bm)...)
	case aok && bok && tokenIDFields()[k] && sameIDs(av, bv):
	case !aok || !bok || !jsonEqual(av, bv):
		out = append(out, fieldChange{path: path, pub: av, exp: bv, pubOK: aok, expOK: bok})
	}
	return out
}

// maxFieldFindings bounds the findings one file's field-by-field
// comparison makes: the rest are counted in one finding, so that a config
// with a million changed keys makes a hundred findings, not a million.
const maxFieldFindings = 100

// fieldFindings collects a file's field findings up to maxFieldFindings.
type fieldFindings struct {
	out  []Finding
	more int
	// moreCode and moreSev are the first code and the highest severity
	// among the findings counted but not listed.
	moreCode Code
	moreSev  Severity
}

func (ff *fieldFindings) add(f Finding) {
	if len(ff.out) < maxFieldFindings {
		ff.out = append(ff.out, f)
		return
	}
	if ff.more == 0 {
		ff.moreCode, ff.moreSev = f.Code, f.Severity
	}
	ff.more++
	ff.moreSev = max(ff.moreSev, f.Severity)
}

// findings are the listed findings and, when some were not listed, one
// that says how many more fields of file differ.
func (ff *fieldFindings) findings(file string) []Finding {
	if ff.more == 0 {
		return ff.out
	}
	return append(ff.out, Finding{Code: ff.moreCode, Severity: ff.moreSev, File: file,
		Message: "and " + textfmt.Plural(ff.more, "more field") + " changed (not listed)"})
}

// jsonEqual compares decoded JSON values, numbers by value: 10000 equals
// 10000.0 and 1e-06 equals 0.000001.
func jsonEqual(a, b any) bool {
	switch a := a.(type) {
	case json.Number:
		bn, ok := b.(json.Number)
		if !ok {
			return false
		}
		if a == bn {
			return true
		}
		x, err1 := strconv.ParseFloat(string(a), 64)
		y, err2 := strconv.ParseFloat(string(bn), 64)
		return err1 == nil && err2 == nil && x == y
	case []any:
		bs, ok := b.([]any)
		if !ok || len(a) != len(bs) {
			return false
		}
		for i := range a {
			if !jsonEqual(a[i], bs[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		bm, ok := b.(map[string]any)
		if !ok || len(a) != len(bm) {
			return false
		}
		for k, v := range a {
			w, ok := bm[k]
			if !ok || !jsonEqual(v, w) {
				return false
			}
		}
		return true
	}
	return a == b
}

// sameIDs compares token ids, one or a list, as sets: an eos_token_id of
// [2, 1] is [1, 2].
func sameIDs(a, b any) bool {
	set := func(v any) []string {
		var out []string
		switch v := v.(type) {
		case []any:
			for _, x := range v {
				out = append(out, jsonText(x))
			}
		default:
			out = append(out, jsonText(v))
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	return slices.Equal(set(a), set(b))
}

// jsonText writes a decoded value compactly for a message, cut at 60
// characters.
func jsonText(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // "<|im_end|>", not "\u003c|im_end|\u003e"
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	s := strings.TrimSuffix(buf.String(), "\n")
	if len(s) > 60 {
		s = strings.ToValidUTF8(s[:57], "") + "..."
	}
	return textfmt.Quote(s)
}

// changeMessage says how a field changed: "8 → 16", or which side has it.
func changeMessage(ch fieldChange) string {
	switch {
	case !ch.pubOK:
		return "only in the exported file: " + jsonText(ch.exp)
	case !ch.expOK:
		return "only in the published file: " + jsonText(ch.pub)
	}
	return jsonText(ch.pub) + " → " + jsonText(ch.exp)
}

// architectureFields change the architecture or the numerics of a model: a
// change is a warning. Fields matched by architectureField's patterns are
// too (sizes, counts, heads, layers, epsilons, rope, experts).
var architectureFields = sync.OnceValue(func() map[string]bool {
	return map[string]bool{
		"architectures": true, "model_type": true, "tie_word_embeddings": true, "quantization_config": true,
		"hidden_act": true, "hidden_activation": true, "activation_function": true, "head_dim": true,
		"attention_bias": true, "mlp_bias": true, "sliding_window": true, "use_sliding_window": true,
		"layer_types": true, "max_window_layers": true, "norm_topk_prob": true, "decoder_sparse_step": true,
		"mlp_only_layers": true, "first_k_dense_replace": true, "kv_lora_rank": true, "q_lora_rank": true,
		"qk_rope_head_dim": true, "qk_nope_head_dim": true, "v_head_dim": true, "attn_logit_softcapping": true,
		"final_logit_softcapping": true, "query_pre_attn_scalar": true, "routed_scaling_factor": true,
		"n_group": true, "topk_group": true, "scoring_func": true, "topk_method": true, "partial_rotary_factor": true,
		"max_position_embeddings": true, "original_max_position_embeddings": true, "logit_scale": true,
		"embedding_multiplier": true, "residual_multiplier": true, "attention_multiplier": true, "logits_scaling": true,
	}
})

// architectureField reports whether a config field path names a field that
// changes the architecture or numerics.
func architectureField(path string) bool {
	for seg := range strings.SplitSeq(path, ".") {
		switch {
		case architectureFields()[seg],
			strings.HasSuffix(seg, "_size"), strings.HasPrefix(seg, "num_"), strings.HasPrefix(seg, "n_"),
			strings.HasSuffix(seg, "_heads"), strings.HasSuffix(seg, "_layers"),
			strings.HasSuffix(seg, "_eps"), strings.HasSuffix(seg, "_epsilon"),
			strings.HasPrefix(seg, "rope"), strings.Contains(seg, "expert"):
			return true
		}
	}
	return false
}

// alwaysSignificant fields matter even when one side leaves them out: the
// model class's default stands in for them, and it may differ.
var alwaysSignificant = sync.OnceValue(func() map[string]bool {
	return map[string]bool{"architectures": true, "model_type": true, "tie_word_embeddings": true, "quantization_config": true}
})

// ropeFields are the fields normalisation moves into one another (dtype,
// rope parameters) or reads to do so: decoded and normalised together.
// Every other field is decoded and compared on its own, so that a config
// of a million fields is never decoded whole.
var ropeFields = sync.OnceValue(func() map[string]bool {
	return map[string]bool{"torch_dtype": true, "dtype": true, "rope_scaling": true, "rope_parameters": true,
		"rope_theta": true, "partial_rotary_factor": true, "original_max_position_embeddings": true,
		"max_position_embeddings": true, "layer_types": true, "rope_local_base_freq": true}
})

// compareConfigs compares the published config.json with the exported one,
// field by field after normalising both: config_changed for each field
// that differs (a warning for architecture and numerics fields present on
// both sides, or for alwaysSignificant ones; info for the rest), and
// tokenizer_changed for the special token ids. Fields written alike on both
// sides are not decoded; past maxFieldFindings, changes are counted.
func compareConfigs(pub, exp *checkpoint.Config) []Finding {
	if pub == nil || exp == nil {
		return nil
	}
	a := normaliseConfig(decodeFields(pub.Fields, ropeFields()))
	b := normaliseConfig(decodeFields(exp.Fields, ropeFields()))
	alignRope(a, b)
	alignRope(b, a)
	keys := unionKeys(a, b)
	for _, fields := range []map[string]json.RawMessage{pub.Fields, exp.Fields} {
		for k := range fields {
			if !ropeFields()[k] {
				keys = append(keys, k)
			}
		}
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	var ff fieldFindings
	var changes []fieldChange
	for _, k := range keys {
		changes = changes[:0]
		if ropeFields()[k] {
			changes = diffKey(changes, "", k, a, b)
		} else {
			ra, aok := pub.Fields[k]
			rb, bok := exp.Fields[k]
			if aok && bok && bytes.Equal(ra, rb) || ignoredConfigFields()[k] {
				continue
			}
			changes = diffKey(changes, "", k, normaliseField(k, ra, aok), normaliseField(k, rb, bok))
		}
		for _, ch := range changes {
			ff.add(configChange(exp.Path, ch))
		}
	}
	return ff.findings(exp.Path)
}

// normaliseField decodes one field that normalisation does not move, as a
// one-field object normalised as normaliseConfig would (sub-configs
// normalised too).
func normaliseField(k string, raw json.RawMessage, ok bool) map[string]any {
	if !ok {
		return nil
	}
	return normaliseConfig(decodeFields(map[string]json.RawMessage{k: raw}, nil))
}

// configChange is the finding for one field of config.json that changed.
func configChange(file string, ch fieldChange) Finding {
	leaf := ch.path[strings.LastIndexByte(ch.path, '.')+1:]
	f := Finding{Code: CodeConfigChanged, Severity: Info, Key: ch.path, File: file, Message: changeMessage(ch), Published: ch.pub, Exported: ch.exp}
	top, _, _ := strings.Cut(ch.path, ".")
	switch {
	case tokenIDFields()[leaf]:
		f.Code, f.Severity = CodeTokenizerChanged, Warning
		f.Message = "special token id " + f.Message
	case alwaysSignificant()[top] || alwaysSignificant()[leaf]:
		f.Severity = Warning
	case architectureField(ch.path) && ch.pubOK && ch.expOK:
		f.Severity = Warning
	}
	return f
}
