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
// as thousands: a side that is a LoRA adapter (peft's, torchtune's or
// mlx-lm's layout; see peftAdapter) rather than a model, and quantized
// tensors that are not compared yet. It also says when the
// export matched only through an adapter that is not the identity: the
// export's names are then not Hugging Face's, and transformers will not
// load it as it is. It returns the findings left, and what it adds.
// matched says every exported key is a published one: neither side is then
// an adapter, unless its adapter_config.json says so.
func (d *Comparison) recognise(findings []Finding, matched bool) []Finding {
	beside := [2]bool{}
	for i, m := range []*Mapped{d.Published, d.Exported} {
		other := []*Mapped{d.Exported, d.Published}[i]
		findings, beside[i] = modelBesideAdapter(findings, m, other)
	}
	for i, m := range []*Mapped{d.Published, d.Exported} {
		if beside[i] {
			continue // a model, with an adapter beside it
		}
		if f, ok := peftAdapter(m, matched); ok {
			// mlx-lm's periodic NNNNNNN_adapters.safetensors repeat adapters.safetensors' names.
			return append(dropCodes(findings, nil, CodeMissingKey, CodeUnexpectedKey, CodeLowKeyOverlap, CodeNotCompared,
				CodeShapeMismatch, CodeDTypeMismatch, CodeTiedWeight, CodeDuplicateKeyAcrossShards, CodeAdapterCollision), f)
		}
	}
	if keys, f := d.quantized(); f.Code != "" {
		d.notCompared = keys
		findings = append(findings, f)
	}
	// GGUF names are llama.cpp's by design: no finding.
	if f, ok := needsAdapter(d.Published.View, d.Exported.View); ok && !isGGUFCheckpoint(d.Exported.Checkpoint) {
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

// peftAdapter recognises a LoRA adapter in any of the layouts
// loralayout.go reads: peft's (huggingface/peft @ v0.20.0: an
// adapter_config.json beside the files, or tensors named
// base_model.model.<module>.lora_A.weight [r, in] and lora_B.weight
// [out, r]; src/peft/utils/save_and_load.py, tuners/lora/layer.py),
// torchtune's own (layers.N.attn.q_proj.lora_a.weight) and mlx-lm's
// training output (ml-explore/mlx-lm @ d78bf58e: mlx_lm/tuner/trainer.py
// saves adapters.safetensors and every steps_per_save a copy,
// NNNNNNN_adapters.safetensors; tuners/lora.py names <module>.lora_a
// [in, r] and .lora_b [r, out]): its pairs are counted once, however many
// snapshots repeat them.
func peftAdapter(m *Mapped, matched bool) (Finding, bool) {
	if matched && m.Checkpoint.PEFT == nil {
		return Finding{}, false // an adapter's names are never a model's
	}
	layout, lora := loraPairs(m.Sources)
	cfg := m.Checkpoint.PEFT
	if lora == 0 && cfg == nil {
		return Finding{}, false
	}
	if lora == 0 && cfg.Trainer == "mlx-lm" {
		layout = layoutMLX
	}
	kind := "LoRA"
	if cfg != nil && cfg.PEFTType != "" && !strings.EqualFold(cfg.PEFTType, "LORA") {
		kind = cfg.PEFTType
	}
	msg := "a " + kind + " adapter"
	switch layout {
	case layoutMLX:
		msg = "an mlx-lm " + kind + " adapter"
	case layoutTorchtune:
		msg = "a torchtune " + kind + " adapter"
	}
	switch {
	case cfg != nil && cfg.BaseModel != "":
		msg += " for " + textfmt.Quote(cfg.BaseModel)
	case cfg != nil:
		msg += " (its adapter_config.json names no base model)"
	default:
		msg += " (no adapter_config.json beside it says for which model)"
	}
	msg += ", not a model: " + mergeAdvice[layout]
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

// mergeAdvice says, per layout, how its trainer merges an adapter into
// the model: peft's merge_and_unload; mlx-lm's fuse; torchtune's
// checkpointer, which saves the merged model (get_merged_lora_ckpt) beside
// the adapter unless the recipe sets save_adapter_weights_only.
var mergeAdvice = [...]string{
	layoutPEFT:      "merge it into the base before diffing (peft's merge_and_unload(), then save_pretrained())",
	layoutMLX:       "fuse it into the base before diffing (mlx_lm.fuse --model BASE --adapter-path DIR)",
	layoutTorchtune: "merge it into the base before diffing (torchtune saves the merged model beside the adapter unless the recipe sets save_adapter_weights_only: True)",
}

// loraPairs counts the low-rank pairs among an adapter's tensors, as
// parseLoRAName reads their names, each once however many files repeat it,
// and says whose layout they are: the first of peft, mlx-lm and torchtune
// that the tensors hold, as readLoRA chooses. A pair that names itself
// peft's way outside base_model.model. (.lora_A., an embedding's
// .lora_embedding_A) is peft's.
func loraPairs(srcs []Source) (loraLayout, int) {
	var pairs [3]map[string]bool
	add := func(l loraLayout, key string) {
		if pairs[l] == nil {
			pairs[l] = map[string]bool{}
		}
		pairs[l][key] = true
	}
	for _, s := range srcs {
		n := s.Tensor.Name
		p, ok := parseLoRAName(n)
		switch {
		case ok && (p.part == 'A' || p.part == 'a'):
			add(p.layout, p.path)
		case !ok && (strings.Contains(n, ".lora_A.") || strings.Contains(n, ".lora_embedding_A")):
			add(layoutPEFT, n)
		}
	}
	for l, ps := range pairs {
		if len(ps) > 0 {
			return loraLayout(l), len(ps)
		}
	}
	return layoutPEFT, 0
}

// quantized finds the weights a quantized side makes incomparable: each
// logical weight its scheme bound (see quantOf and adapter.View.BindQuant)
// that the other side holds in another encoding (a dequantized export).
// A weight both sides store alike compares as it is, companions and all;
// one the other side lacks stays a missing or unexpected key, whatever its
// encoding. It returns the incomparable weights with the reason, and the
// one finding that says what is quantized.
func (d *Comparison) quantized() (map[string]string, Finding) {
	views := [2]*adapter.View{d.Published.View, d.Exported.View}
	keys := map[string]string{}
	bound, companions, missing := 0, 0, [2]int{}
	for i, v := range views {
		other := views[1-i]
		for _, t := range v.Tensors {
			if t.Quant == nil {
				continue
			}
			bound++
			o, ok := other.Tensor(t.Name)
			switch {
			case !ok && other.AbsentFor(t.Name) >= 0: // an adapter_absent says so
			case !ok:
				missing[i]++
			case sameEncoding(t, o), comparableQuant(t, o): // compared as stored, or decoded
			case ggmlShapesDiffer(t, o): // a shape_mismatch
			default:
				if _, seen := keys[t.Name]; !seen {
					keys[t.Name] = "quantized: not compared yet (" + t.Quant.Codec.String() + ")"
					companions += len(t.Quant.Companions)
					if o.Quant != nil {
						companions += len(o.Quant.Companions)
					}
				}
			}
		}
	}
	if bound == 0 {
		return nil, Finding{}
	}
	var sides []string
	for i, s := range []Side{Published, Exported} {
		if d.quant[i].method != "" && !d.quant[i].borrowed {
			sides = append(sides, fmt.Sprintf("the %s side (%s)", s, d.quant[i].method))
		}
	}
	msg := fmt.Sprintf("%s quantized: %s not compared yet, with the %s bound to them (a later version will dequantize them)",
		strings.Join(sides, " and "), textfmt.Plural(len(keys), "weight"), textfmt.Plural(companions, "scale or block tensor"))
	if len(keys) == 0 {
		msg = strings.Join(sides, " and ") + " quantized: every weight both sides hold is stored alike or decoded, and compared"
	}
	for i, s := range []Side{Published, Exported} {
		if missing[i] > 0 {
			code := CodeMissingKey
			if s == Exported {
				code = CodeUnexpectedKey
			}
			msg += fmt.Sprintf("; %s of the %s side not in the other (each a %s)", textfmt.Plural(missing[i], "quantized weight"), s, code)
		}
	}
	if len(keys) == 0 && missing == [2]int{} {
		return nil, Finding{}
	}
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
