package verify

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/ckptcheck/ckptcheck/adapter"
	"github.com/ckptcheck/ckptcheck/internal/textfmt"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// recognise says in one finding what a key-by-key comparison would report
// as thousands: a side that is a PEFT (LoRA) adapter rather than a model,
// and quantized tensors that are not compared yet. It also says when the
// export matched only through an adapter that is not the identity: the
// export's names are then not Hugging Face's, and transformers will not
// load it as it is. It returns the findings left, and what it adds.
// matched says every exported key is a published one: neither side is then
// a PEFT adapter, unless its adapter_config.json says so.
func (d *Comparison) recognise(findings []Finding, matched bool) []Finding {
	for _, m := range []*Mapped{d.Published, d.Exported} {
		if f, ok := peftAdapter(m, matched); ok {
			return append(dropCodes(findings, nil, CodeMissingKey, CodeUnexpectedKey, CodeLowKeyOverlap, CodeNotCompared,
				CodeShapeMismatch, CodeDTypeMismatch, CodeTiedWeight), f)
		}
	}
	if keys, f := d.quantized(); len(keys) > 0 {
		d.notCompared = keys
		findings = append(dropCodes(findings, keys, CodeMissingKey, CodeUnexpectedKey, CodeShapeMismatch, CodeDTypeMismatch), f)
		findings = dropCodes(findings, nil, CodeLowKeyOverlap) // the missing keys it counted are said above
	}
	if f, ok := needsAdapter(d.Published.View, d.Exported.View); ok {
		findings = append(findings, f)
	}
	return findings
}

// dropCodes removes the findings of the given codes; with keys set, only
// those whose key is one of them.
func dropCodes(fs []Finding, keys map[string]string, codes ...Code) []Finding {
	return slices.DeleteFunc(fs, func(f Finding) bool {
		if !slices.Contains(codes, f.Code) {
			return false
		}
		if keys == nil {
			return true
		}
		_, ok := keys[f.Key]
		return ok
	})
}

// peftAdapter recognises a PEFT adapter (huggingface/peft @ v0.20.0): an
// adapter_config.json beside the files, or tensors named as PEFT saves
// them, base_model.model.<module>.lora_A.weight [r, in] and lora_B.weight
// [out, r] (src/peft/utils/save_and_load.py, tuners/lora/layer.py).
func peftAdapter(m *Mapped, matched bool) (Finding, bool) {
	if matched && m.Checkpoint.PEFT == nil {
		return Finding{}, false // an adapter's names are never a model's
	}
	lora := 0
	for _, s := range m.Sources {
		n := s.Tensor.Name
		if strings.Contains(n, ".lora_A.") || strings.Contains(n, ".lora_embedding_A") {
			lora++
		}
	}
	cfg := m.Checkpoint.PEFT
	if lora == 0 && cfg == nil {
		return Finding{}, false
	}
	kind := "LoRA"
	if cfg != nil && cfg.PEFTType != "" && !strings.EqualFold(cfg.PEFTType, "LORA") {
		kind = cfg.PEFTType
	}
	msg := "a " + kind + " adapter"
	switch {
	case cfg != nil && cfg.BaseModel != "":
		msg += " for " + textfmt.Quote(cfg.BaseModel)
	case cfg != nil:
		msg += " (its adapter_config.json names no base model)"
	default:
		msg += " (no adapter_config.json beside it says for which model)"
	}
	msg += ", not a model: merge it into the base before diffing (peft's merge_and_unload(), then save_pretrained())"
	if lora > 0 {
		msg += fmt.Sprintf("; it holds %s", textfmt.Plural(lora, "low-rank pair"))
		if cfg != nil && cfg.Rank > 0 {
			msg += fmt.Sprintf(" of rank %d", cfg.Rank)
		}
	}
	f := Finding{Code: CodeLoRAAdapter, Severity: Error, Side: m.Side, Message: msg}
	if cfg != nil {
		f.File = cfg.Path
	}
	return f, true
}

// Quantization stores a weight as low-bit values beside scales. These are
// the names of the companions, each with the suffix that turns it into the
// name of the weight it belongs to:
//   - FP8 block quantization (DeepSeek-V3, deepseek-ai/DeepSeek-V3
//     inference/fp8_cast_bf16.py): X.weight (F8_E4M3) and X.weight_scale_inv;
//   - MXFP4 (gpt-oss; transformers integrations/mxfp4.py): X_blocks and
//     X_scales for the weight X;
//   - compressed-tensors FP8 and INT8: X.weight_scale, X.input_scale;
//   - GPTQ/AWQ: X.qweight, X.qzeros, X.scales, X.g_idx for X.weight.
var quantSuffixes = [][2]string{
	{".weight_scale_inv", ".weight"}, {"_blocks", ""}, {"_scales", ""},
	{".weight_scale", ".weight"}, {".input_scale", ".weight"},
	{".qweight", ".weight"}, {".qzeros", ".weight"}, {".scales", ".weight"}, {".g_idx", ".weight"},
}

// quantBase returns the weight a quantization companion belongs to.
func quantBase(name string) (string, bool) {
	for _, s := range quantSuffixes {
		if stem, ok := strings.CutSuffix(name, s[0]); ok && stem != "" {
			return stem + s[1], true
		}
	}
	return "", false
}

// quantized finds the keys a quantized side makes incomparable: the
// quantization companions of either side and the weights they belong to,
// unless both sides hold the key alike (same dtype and shape: then it is
// compared as it is). It returns them with the reason, and the one finding
// that says so.
func (d *Comparison) quantized() (map[string]string, Finding) {
	views := [2]*adapter.View{d.Published.View, d.Exported.View}
	var methods [2]string
	suspects := map[string]bool{}
	for i, m := range []*Mapped{d.Published, d.Exported} {
		// A side is quantized when its config says so, or when it holds
		// sub-byte or 8-bit float tensors: names alone (a model's own
		// "*.scales") are no evidence.
		if c := parsedConfig(m.Checkpoint); c != nil && c.Quantized {
			methods[i] = quantMethod(c.Fields["quantization_config"])
		}
		for _, t := range views[i].Tensors {
			if methods[i] == "" && lowBit(t.DType) {
				methods[i] = t.DType.String() + " tensors"
			}
		}
		if methods[i] == "" {
			continue
		}
		for _, t := range views[i].Tensors {
			if base, ok := quantBase(t.Name); ok {
				suspects[t.Name], suspects[base] = true, true
			}
		}
	}
	keys := map[string]string{}
	companions := 0
	for name := range suspects {
		p, inP := views[0].Tensor(name)
		e, inE := views[1].Tensor(name)
		if inP && inE && p.DType == e.DType && slices.Equal(p.Shape, e.Shape) {
			continue
		}
		if !inP && !inE {
			continue
		}
		keys[name] = "quantized: not compared yet"
		if _, ok := quantBase(name); ok {
			companions++
		}
	}
	if len(keys) == 0 {
		return nil, Finding{}
	}
	var sides []string
	for i, s := range []Side{Published, Exported} {
		if methods[i] != "" {
			sides = append(sides, fmt.Sprintf("the %s side (%s)", s, methods[i]))
		}
	}
	msg := fmt.Sprintf("%s quantized: %s not compared yet, %s and the %s they belong to (a later version will dequantize them)",
		strings.Join(sides, " and "), textfmt.Plural(len(keys), "key"), textfmt.Plural(companions, "scale or block tensor"),
		textfmt.Plural(len(keys)-companions, "weight"))
	return keys, Finding{Code: CodeQuantizedUnsupported, Severity: Warning, Message: msg, Keys: slices.Sorted(maps.Keys(keys))}
}

// lowBit reports the dtypes only quantization writes: 8-bit and smaller
// floats.
func lowBit(d safetensors.DType) bool {
	return d.IsFloat() && d.Bits() <= 8
}

// quantMethod names a quantization_config: its quant_method, and fmt when
// given ("fp8 e4m3", "mxfp4").
func quantMethod(raw json.RawMessage) string {
	var q struct {
		Method any `json:"quant_method"`
		Fmt    any `json:"fmt"`
	}
	if json.Unmarshal(raw, &q) != nil {
		return "quantization_config"
	}
	s, _ := q.Method.(string)
	if f, ok := q.Fmt.(string); ok && s != "" {
		s += " " + f
	}
	if s == "" {
		return "quantization_config"
	}
	return "quantization_config " + s
}

// needsAdapter reports an export that matched the published keys only
// through adapters other than the identity: its names (or layouts) are not
// Hugging Face's, and transformers will not load it as it is. It names each
// adapter with how many of the matched tensors it mapped.
func needsAdapter(pub, exp *adapter.View) (Finding, bool) {
	if exp.Adapter == "hf" {
		return Finding{}, false
	}
	by := map[string]int{}
	matched, mapped := 0, 0
	for _, t := range exp.Tensors {
		if _, ok := pub.Tensor(t.Name); !ok {
			continue
		}
		matched++
		who, name := "", t.Name
		if t.Alias != "" {
			name = t.AliasOf // a transformers alias: a Hugging Face name either way
		}
		switch {
		case t.Rule != "":
			who, _, _ = strings.Cut(t.Rule, ":")
		case name != t.Source:
			who = exp.Adapter // renamed by the chain's rewrites
		}
		if who != "" {
			by[who]++
			mapped++
		}
	}
	if mapped == 0 {
		return Finding{}, false
	}
	var parts []string
	for _, a := range slices.Sorted(maps.Keys(by)) {
		parts = append(parts, fmt.Sprintf("%s mapped %s", a, textfmt.Thousands(by[a])))
	}
	msg := fmt.Sprintf("the export matches only through adapter %s (%s of the %s matching tensors): its names are not Hugging Face's, so transformers will not load it as it is; convert it to the published names before uploading",
		exp.Adapter, strings.Join(parts, ", "), textfmt.Thousands(matched))
	return Finding{Code: CodeNeedsAdapter, Severity: Warning, Side: Exported, Message: msg}, true
}
