package adapter

import (
	"strings"
	"sync"
)

// transformers loads a checkpoint under either of two namings of its own,
// so a diff must accept both as they are (and say no needs_adapter):
//
//   - The base model's prefix. A state dict saved from the bare model
//     (GPT2Model, LlamaModel, BertModel) lacks the head model's
//     base_model_prefix ("transformer.", "model.", "bert."); from_pretrained
//     adds it when a head model loads a base checkpoint and strips it when a
//     base model loads a head checkpoint, dropping the head's own tensors
//     (modeling_utils.py _get_key_renaming_mapping, v4.52+:
//     loading_task_model_from_base_state_dict / loading_base_model_from_task_state_dict).
//   - Vision-language models since 4.52: the class's
//     _checkpoint_conversion_mapping renames the Hub files' older names
//     (language_model.model.*, visual.*, vision_tower.*) to the module tree's
//     (model.language_model.*, model.visual.*, model.vision_tower.*) on load,
//     and save_pretrained renames them back. v5 carries the same renamings
//     (src/transformers/conversion_mapping.py get_model_conversion_mapping
//     @ 000c33fd: a WeightRenaming for each _checkpoint_conversion_mapping
//     entry of the classes in VLMS). Accelerate, DeepSpeed's zero_to_fp32 and
//     FSDP state-dict dumps hold the new names, the Hub files the old ones.

// A basePrefix is a model_type's base_model_prefix, with the modeling file
// that declares it.
type basePrefix struct {
	prefix, source string
}

// basePrefixes are the PreTrainedModel classes' base_model_prefix, by
// model_type, as huggingface/transformers declares them.
var basePrefixes = sync.OnceValue(func() map[string]basePrefix {
	return map[string]basePrefix{
		"gpt2":       {"transformer", "src/transformers/models/gpt2/modeling_gpt2.py GPT2PreTrainedModel @ 0010f602"},
		"gptj":       {"transformer", "src/transformers/models/gptj/modeling_gptj.py GPTJPreTrainedModel @ 00b676f8"},
		"falcon":     {"transformer", "src/transformers/models/falcon/modeling_falcon.py FalconPreTrainedModel @ 44272086"},
		"bloom":      {"transformer", "src/transformers/models/bloom/modeling_bloom.py BloomPreTrainedModel @ 9d97831a"},
		"llama":      {"model", "src/transformers/models/llama/modeling_llama.py LlamaPreTrainedModel @ 00227283"},
		"mistral":    {"model", "src/transformers/models/mistral/modeling_mistral.py MistralPreTrainedModel @ 93e0020c"},
		"mixtral":    {"model", "src/transformers/models/mixtral/modeling_mixtral.py MixtralPreTrainedModel @ af3efdd7"},
		"qwen2":      {"model", "src/transformers/models/qwen2/modeling_qwen2.py Qwen2PreTrainedModel @ 63bb7237"},
		"qwen3":      {"model", "src/transformers/models/qwen3/modeling_qwen3.py Qwen3PreTrainedModel @ 9ee3f431"},
		"qwen2_vl":   {"model", "src/transformers/models/qwen2_vl/modeling_qwen2_vl.py Qwen2VLPreTrainedModel @ 7e7810ab"},
		"qwen2_5_vl": {"model", "src/transformers/models/qwen2_5_vl/modeling_qwen2_5_vl.py Qwen2_5_VLPreTrainedModel @ d903f323"},
		"bert":       {"bert", "src/transformers/models/bert/modeling_bert.py BertPreTrainedModel @ 8ec58104"},
		"roberta":    {"roberta", "src/transformers/models/roberta/modeling_roberta.py RobertaPreTrainedModel @ 87b236ba"},
	}
})

// A conversion is a vision-language class's _checkpoint_conversion_mapping
// as pairs of name prefixes, the Hub files' (old) and the module tree's
// (new), first match wins, as its regexes apply.
type conversion struct {
	pairs  [][2]string
	source string
}

// llavaConversion is LlavaForConditionalGeneration's mapping (huggingface/transformers
// src/transformers/models/llava/modeling_llava.py @ 00d3cdbe):
//
//	"^language_model.model": "model.language_model",
//	"^vision_tower": "model.vision_tower",
//	"^multi_modal_projector": "model.multi_modal_projector",
//	"^language_model.lm_head": "lm_head",
//
// Gemma3ForConditionalGeneration (modeling_gemma3.py @ f14d0cbc),
// Mistral3ForConditionalGeneration (modeling_mistral3.py @ 7e7810ab) and
// InternVLForConditionalGeneration (modeling_internvl.py @ 2fd44548)
// declare the same four.
var llavaConversion = [][2]string{
	{"language_model.model.", "model.language_model."},
	{"vision_tower.", "model.vision_tower."},
	{"multi_modal_projector.", "model.multi_modal_projector."},
	{"language_model.lm_head.", "lm_head."},
}

// qwenVLConversion is Qwen2VLForConditionalGeneration's
// (modeling_qwen2_vl.py @ 7e7810ab) and Qwen2_5_VLForConditionalGeneration's
// (modeling_qwen2_5_vl.py @ d903f323) mapping:
//
//	"^visual": "model.visual",
//	r"^model(?!\.(language_model|visual))": "model.language_model",
//
// (a name under model.language_model. or model.visual. is new already).
var qwenVLConversion = [][2]string{
	{"visual.", "model.visual."},
	{"model.", "model.language_model."},
}

var conversions = sync.OnceValue(func() map[string]conversion {
	return map[string]conversion{
		"llava":      {llavaConversion, "src/transformers/models/llava/modeling_llava.py LlavaForConditionalGeneration @ 00d3cdbe"},
		"gemma3":     {llavaConversion, "src/transformers/models/gemma3/modeling_gemma3.py Gemma3ForConditionalGeneration @ f14d0cbc"},
		"mistral3":   {llavaConversion, "src/transformers/models/mistral3/modeling_mistral3.py Mistral3ForConditionalGeneration @ 7e7810ab"},
		"internvl":   {llavaConversion, "src/transformers/models/internvl/modeling_internvl.py InternVLForConditionalGeneration @ 2fd44548"},
		"qwen2_vl":   {qwenVLConversion, "src/transformers/models/qwen2_vl/modeling_qwen2_vl.py Qwen2VLForConditionalGeneration @ 7e7810ab"},
		"qwen2_5_vl": {qwenVLConversion, "src/transformers/models/qwen2_5_vl/modeling_qwen2_5_vl.py Qwen2_5_VLForConditionalGeneration @ d903f323"},
	}
})

// Aliases are the names transformers loads a model_type's checkpoints
// under besides their own: with or without the base model's prefix, and
// for vision-language models both generations of names.
type Aliases struct {
	prefix     basePrefix // prefix without its dot; "" when none
	conversion conversion
}

// AliasesOf returns what transformers accepts for checkpoints of modelType.
func AliasesOf(modelType string) Aliases {
	return Aliases{prefix: basePrefixes()[modelType], conversion: conversions()[modelType]}
}

// BasePrefix returns the model_type's base_model_prefix, with its dot
// ("transformer."), and where transformers declares it; "" when not known.
func (a Aliases) BasePrefix() (prefix, source string) {
	if a.prefix.prefix == "" {
		return "", ""
	}
	return a.prefix.prefix + ".", a.prefix.source
}

// Align renames exp's tensors to pub's naming where transformers would load
// one as the other: the older or newer vision-language names, then the base
// model's prefix added or removed, each only when more names then match.
// It returns exp itself when nothing changes, else a new view whose renamed tensors carry the transformers
// rule in Alias (needs_adapter does not count them: the names are Hugging
// Face's). Only names change; segments and layouts are exp's.
func (a Aliases) Align(pub, exp *View) *View {
	if a.prefix.prefix == "" && a.conversion.pairs == nil {
		return exp
	}
	var rename []func(string) (string, string)
	if pairs := a.conversion.pairs; pairs != nil {
		pubNew, pubOld := generations(pub, pairs)
		expNew, expOld := generations(exp, pairs)
		switch {
		case pubNew && !pubOld && expOld && !expNew:
			rename = append(rename, func(n string) (string, string) {
				return convertName(n, pairs, false), "transformers _checkpoint_conversion_mapping (" + a.conversion.source + ")"
			})
		case pubOld && !pubNew && expNew && !expOld:
			rename = append(rename, func(n string) (string, string) {
				return convertName(n, pairs, true), "transformers save_pretrained's reverse _checkpoint_conversion_mapping (" + a.conversion.source + ")"
			})
		}
	}
	out := exp
	if len(rename) > 0 {
		out = better(pub, out, out.renamed(rename[0]))
	}
	if p := a.prefix.prefix; p != "" {
		p += "."
		pubHas, outHas := hasPrefix(pub, p), hasPrefix(out, p)
		why := "transformers base_model_prefix " + `"` + a.prefix.prefix + `"` + " (" + a.prefix.source + ")"
		switch {
		case pubHas && !outHas:
			out = better(pub, out, out.renamed(func(n string) (string, string) { return p + n, why }))
		case !pubHas && outHas:
			out = better(pub, out, out.renamed(func(n string) (string, string) { return strings.TrimPrefix(n, p), why }))
		}
	}
	return out
}

// better keeps the renamed view only when more of its names are pub's: a
// prefix added to names of another scheme altogether (student.model.*)
// would only hide the prefix that does explain them.
func better(pub, was, renamed *View) *View {
	if shared(pub, renamed) > shared(pub, was) {
		return renamed
	}
	return was
}

func shared(pub, v *View) int {
	n := 0
	for _, t := range v.Tensors {
		if _, ok := pub.byName[t.Name]; ok {
			n++
		}
	}
	return n
}

// generations reports whether a view holds names of the new generation (a
// conversion's target prefixes) and of the old one (a source prefix, on a
// name that is not new).
func generations(v *View, pairs [][2]string) (isNew, isOld bool) {
	for _, t := range v.Tensors {
		n := isNewName(t.Name, pairs)
		isNew = isNew || n
		if !n {
			for _, p := range pairs {
				if strings.HasPrefix(t.Name, p[0]) {
					isOld = true
					break
				}
			}
		}
		if isNew && isOld {
			return
		}
	}
	return
}

func isNewName(name string, pairs [][2]string) bool {
	for _, p := range pairs {
		if strings.HasPrefix(name, p[1]) {
			return true
		}
	}
	return false
}

// convertName applies the first pair whose source prefix the name has:
// old to new (a name that is new already stays), or, reverse, new to old.
func convertName(name string, pairs [][2]string, reverse bool) string {
	from, to := 0, 1
	if reverse {
		from, to = 1, 0
	} else if isNewName(name, pairs) {
		return name
	}
	for _, p := range pairs {
		if rest, ok := strings.CutPrefix(name, p[from]); ok {
			return p[to] + rest
		}
	}
	return name
}

func hasPrefix(v *View, p string) bool {
	for _, t := range v.Tensors {
		if strings.HasPrefix(t.Name, p) {
			return true
		}
	}
	return false
}

// renamed returns a copy of v whose tensors are renamed by f, which says
// why; a tensor f leaves as it is keeps its name and alias.
func (v *View) renamed(f func(string) (string, string)) *View {
	out := *v
	out.Tensors = make([]Tensor, 0, len(v.Tensors))
	out.byName = make(map[string]int, len(v.Tensors))
	out.Collisions = append([]Collision(nil), v.Collisions...)
	for _, t := range v.Tensors {
		if name, why := f(t.Name); name != t.Name {
			if t.Alias == "" {
				t.AliasOf = t.Name
			}
			t.Name, t.Alias = name, why
		}
		if j, dup := out.byName[t.Name]; dup {
			out.Collisions = append(out.Collisions, Collision{Name: t.Name, Sources: []string{out.Tensors[j].Source, t.Source}})
			continue
		}
		out.byName[t.Name] = len(out.Tensors)
		out.Tensors = append(out.Tensors, t)
	}
	return &out
}
