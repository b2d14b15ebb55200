package verify

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/adapter"
	"github.com/ckptcheck/ckptcheck/internal/fixture"
)

// Exports that transformers loads as they are, under the published model's
// other Hugging Face names (adapter/hfnames.go): the base model's prefix
// added or stripped (huggingface/transformers modeling_utils.py
// _get_key_renaming_mapping, v4.52+; base_model_prefix of
// models/gpt2/modeling_gpt2.py @ 0010f602, models/llama/modeling_llama.py
// @ 00227283, models/bert/modeling_bert.py @ 8ec58104), and vision-language
// models' two generations of names (_checkpoint_conversion_mapping of
// models/llava/modeling_llava.py @ 00d3cdbe, models/gemma3/modeling_gemma3.py
// @ f14d0cbc, models/mistral3/modeling_mistral3.py @ 7e7810ab and
// models/qwen2_vl/modeling_qwen2_vl.py @ 7e7810ab;
// v5 conversion_mapping.py @ 000c33fd get_model_conversion_mapping). Each
// passes with no needs_adapter; a swap of two same-shaped tensors must fail
// on values.

// gpt2Model is a GPT-2 checkpoint: GPT2Model's names under prefix
// ("transformer." as GPT2LMHeadModel saves them, "" as GPT2Model does),
// Conv1D weights [in, out]; head adds GPT2LMHeadModel's tied lm_head.weight.
func gpt2Model(prefix string, head bool) *hfModel {
	m := &hfModel{}
	c := cvHidden
	m.add(prefix+"wte.weight", cvVocab, c)
	m.add(prefix+"wpe.weight", 8, c)
	for i := range cvLayers {
		p := fmt.Sprintf("%sh.%d.", prefix, i)
		m.add(p+"ln_1.weight", c)
		m.add(p+"ln_1.bias", c)
		m.add(p+"attn.c_attn.weight", c, 3*c)
		m.add(p+"attn.c_attn.bias", 3*c)
		m.add(p+"attn.c_proj.weight", c, c)
		m.add(p+"attn.c_proj.bias", c)
		m.add(p+"ln_2.weight", c)
		m.add(p+"ln_2.bias", c)
		m.add(p+"mlp.c_fc.weight", c, 4*c)
		m.add(p+"mlp.c_fc.bias", 4*c)
		m.add(p+"mlp.c_proj.weight", 4*c, c)
		m.add(p+"mlp.c_proj.bias", c)
	}
	m.add(prefix+"ln_f.weight", c)
	m.add(prefix+"ln_f.bias", c)
	if head {
		m.add("lm_head.weight", cvVocab, c)
	}
	m.setConfig("gpt2", map[string]any{"tie_word_embeddings": true})
	return m
}

// reprefix renames every tensor from one prefix to another (the state dict
// of the bare model inside the head model, or the reverse).
func reprefix(ts []fixture.Tensor, from, to string) []fixture.Tensor {
	for i := range ts {
		if rest, ok := strings.CutPrefix(ts[i].Name, from); ok {
			ts[i].Name = to + rest
		}
	}
	return ts
}

// swapValues exchanges the values of two same-shaped tensors of ts: the
// negative control.
func swapValues(ts []fixture.Tensor, a, b string) []fixture.Tensor {
	var ia, ib = -1, -1
	for i, t := range ts {
		switch t.Name {
		case a:
			ia = i
		case b:
			ib = i
		}
	}
	if ia < 0 || ib < 0 {
		panic("no " + a + " or " + b)
	}
	ts[ia].Data, ts[ib].Data = ts[ib].Data, ts[ia].Data
	return ts
}

// nanoGPT is karpathy/nanoGPT model.py's state dict of a GPT-2: its
// from_pretrained copies HF's Conv1D weights transposed, sd[k].copy_(sd_hf[k].t())
// for transposed = ['attn.c_attn.weight', 'attn.c_proj.weight',
// 'mlp.c_fc.weight', 'mlp.c_proj.weight'], and its lm_head.weight is tied to
// transformer.wte.weight (both in the state dict). squareKept leaves the
// square attn.c_proj.weight untransposed: the negative control.
func nanoGPT(m *hfModel, squareKept bool) []fixture.Tensor {
	var out []fixture.Tensor
	for i := range cvLayers {
		for _, w := range []string{"attn.c_attn.weight", "attn.c_proj.weight", "mlp.c_fc.weight", "mlp.c_proj.weight"} {
			name := fmt.Sprintf("transformer.h.%d.%s", i, w)
			x := m.take(name)
			if !(squareKept && w == "attn.c_proj.weight") {
				x = x.transpose(0, 1)
			}
			out = append(out, x.tensor(name))
		}
	}
	wte := m.t["transformer.wte.weight"]
	out = append(out, wte.tensor("lm_head.weight"))
	return m.done(append(out, m.rest()...))
}

// llamaBase is LlamaModel's state dict of an hfLlama model: no "model."
// and no head.
func llamaBase(m *hfModel) []fixture.Tensor {
	return m.done(reprefix(m.rest(), "model.", ""))
}

// vlmLanguage adds a small language model under p ("language_model.model.",
// "model.language_model.", "model.").
func (m *hfModel) vlmLanguage(p string) {
	m.add(p+"embed_tokens.weight", cvVocab, cvHidden)
	for i := range cvLayers {
		lp := fmt.Sprintf("%slayers.%d.", p, i)
		m.add(lp+"input_layernorm.weight", cvHidden)
		m.attention(lp, false, false)
		m.add(lp+"mlp.down_proj.weight", cvHidden, cvInter)
	}
	m.add(p+"norm.weight", cvHidden)
}

const vlmVision = 6 // the vision tower's width: neither the text width nor its multiples

// llavaOld is a LLaVA-layout checkpoint as the Hub files hold it: the
// names before 4.52 (language_model.model.*, language_model.lm_head,
// vision_tower.*, multi_modal_projector.*), for model_type modelType.
func llavaOld(modelType string) *hfModel {
	m := &hfModel{}
	m.vlmLanguage("language_model.model.")
	m.add("language_model.lm_head.weight", cvVocab, cvHidden)
	for i := range cvLayers {
		p := fmt.Sprintf("vision_tower.vision_model.encoder.layers.%d.self_attn.", i)
		m.add(p+"q_proj.weight", vlmVision, vlmVision)
		m.add(p+"k_proj.weight", vlmVision, vlmVision)
	}
	m.add("multi_modal_projector.linear_1.weight", cvHidden, vlmVision)
	m.add("multi_modal_projector.linear_2.weight", cvHidden, cvHidden)
	m.setConfig(modelType, nil)
	return m
}

// llavaMapping is LlavaForConditionalGeneration._checkpoint_conversion_mapping
// (models/llava/modeling_llava.py @ 00d3cdbe; Gemma 3 @ f14d0cbc, Mistral 3
// @ 7e7810ab and InternVL @ 2fd44548 declare the same), applied as from_pretrained does: per key,
// re.subn of each pattern in order, the first that replaces wins.
var llavaMapping = [][2]string{
	{"^language_model.model", "model.language_model"},
	{"^vision_tower", "model.vision_tower"},
	{"^multi_modal_projector", "model.multi_modal_projector"},
	{"^language_model.lm_head", "lm_head"},
}

// vlmMappingSource is where each model_type's ForConditionalGeneration
// declares llavaMapping.
var vlmMappingSource = map[string]string{
	"llava":    "models/llava/modeling_llava.py @ 00d3cdbe",
	"gemma3":   "models/gemma3/modeling_gemma3.py @ f14d0cbc",
	"mistral3": "models/mistral3/modeling_mistral3.py @ 7e7810ab",
}

func applyMapping(ts []fixture.Tensor, mapping [][2]string) []fixture.Tensor {
	for i := range ts {
		for _, kv := range mapping {
			re := regexp.MustCompile(kv[0])
			if re.MatchString(ts[i].Name) {
				ts[i].Name = re.ReplaceAllString(ts[i].Name, kv[1])
				break
			}
		}
	}
	return ts
}

// qwenVLNew is a Qwen2-VL-layout checkpoint under the names since 4.52
// (model.language_model.*, model.visual.*, lm_head).
func qwenVLNew(modelType string) *hfModel {
	m := &hfModel{}
	m.vlmLanguage("model.language_model.")
	m.add("lm_head.weight", cvVocab, cvHidden)
	for i := range cvLayers {
		m.add(fmt.Sprintf("model.visual.blocks.%d.attn.qkv.weight", i), 3*vlmVision, vlmVision)
	}
	m.add("model.visual.merger.mlp.0.weight", vlmVision, vlmVision)
	m.setConfig(modelType, nil)
	return m
}

// qwenVLSaved is save_pretrained's reverse of Qwen2VLForConditionalGeneration's
// mapping {"^visual": "model.visual", r"^model(?!\.(language_model|visual))":
// "model.language_model"} (modeling_utils.py v4.52+): each value is the
// pattern, each key the replacement with "^" stripped and re.sub(r"\(.*\)",
// "", ...) applied ("visual", "model"), the first that replaces wins.
func qwenVLSaved(m *hfModel) []fixture.Tensor {
	reverse := [][2]string{{"model.visual", "visual"}, {"model.language_model", "model"}}
	return m.done(applyMapping(m.rest(), reverse))
}

func TestTransformersNamesConventions(t *testing.T) {
	gpt2Keys := []string{"transformer.h.0.attn.c_proj.weight", "transformer.h.1.attn.c_proj.weight"}
	swapGPT2 := func(ts []fixture.Tensor) []fixture.Tensor {
		return swapValues(ts, "h.0.attn.c_proj.weight", "h.1.attn.c_proj.weight")
	}
	tiedLlama := func() *hfModel {
		m := hfLlama("llama", 0)
		m.take("lm_head.weight")
		m.config["tie_word_embeddings"] = true
		return m
	}
	bertBase := func() *hfModel {
		m := &hfModel{}
		m.add("embeddings.word_embeddings.weight", cvVocab, cvHidden)
		for i := range cvLayers {
			p := fmt.Sprintf("encoder.layer.%d.attention.self.", i)
			m.add(p+"query.weight", cvHidden, cvHidden)
			m.add(p+"key.weight", cvHidden, cvHidden)
		}
		m.add("pooler.dense.weight", cvHidden, cvHidden)
		m.setConfig("bert", nil)
		return m
	}
	vlmOldToNew := func(modelType string) convention {
		return convention{
			name:    modelType + ": Hub names published, the 4.52+ module names exported",
			source:  "huggingface/transformers " + vlmMappingSource[modelType] + " _checkpoint_conversion_mapping",
			model:   func() *hfModel { return llavaOld(modelType) },
			export:  func(m *hfModel) []fixture.Tensor { return m.done(applyMapping(m.rest(), llavaMapping)) },
			adapter: "hf",
			broken: func(m *hfModel) []fixture.Tensor {
				return swapValues(m.done(applyMapping(m.rest(), llavaMapping)),
					"model.vision_tower.vision_model.encoder.layers.0.self_attn.q_proj.weight",
					"model.vision_tower.vision_model.encoder.layers.0.self_attn.k_proj.weight")
			},
			brokenKeys: []string{"vision_tower.vision_model.encoder.layers.0.self_attn.q_proj.weight",
				"vision_tower.vision_model.encoder.layers.0.self_attn.k_proj.weight"},
		}
	}
	runConventions(t, []convention{
		{
			name:    "gpt2: GPT2LMHeadModel published (tied head dropped), GPT2Model exported",
			source:  "huggingface/transformers models/gpt2/modeling_gpt2.py @ 0010f602 base_model_prefix = \"transformer\"",
			model:   func() *hfModel { return gpt2Model("transformer.", false) },
			export:  func(m *hfModel) []fixture.Tensor { return m.done(reprefix(m.rest(), "transformer.", "")) },
			adapter: "hf",
			broken: func(m *hfModel) []fixture.Tensor {
				return swapGPT2(m.done(reprefix(m.rest(), "transformer.", "")))
			},
			brokenKeys: gpt2Keys,
		},
		{
			name:   "gpt2: GPT2Model published (as the Hub's gpt2), GPT2LMHeadModel's state dict exported",
			source: "huggingface/transformers models/gpt2/modeling_gpt2.py @ 0010f602 base_model_prefix = \"transformer\"",
			model:  func() *hfModel { return gpt2Model("", false) },
			export: func(m *hfModel) []fixture.Tensor {
				wte := m.t["wte.weight"]
				return m.done(append(reprefix(m.rest(), "", "transformer."), wte.tensor("lm_head.weight")))
			},
			adapter: "hf",
			want:    []string{"info tied_weight lm_head.weight"},
			broken: func(m *hfModel) []fixture.Tensor {
				return swapValues(m.done(reprefix(m.rest(), "", "transformer.")),
					"transformer.h.0.attn.c_proj.weight", "transformer.h.1.attn.c_proj.weight")
			},
			brokenKeys: []string{"h.0.attn.c_proj.weight", "h.1.attn.c_proj.weight"},
		},
		{
			name:    "gpt2: nanoGPT's nn.Linear layout, a transpose",
			source:  "karpathy/nanoGPT model.py GPT.from_pretrained (transposed = [...]; sd[k].copy_(sd_hf[k].t()))",
			model:   func() *hfModel { return gpt2Model("transformer.", false) },
			export:  func(m *hfModel) []fixture.Tensor { return nanoGPT(m, false) },
			adapter: "nanogpt",
			want:    []string{"info tied_weight lm_head.weight"},
			broken:  func(m *hfModel) []fixture.Tensor { return nanoGPT(m, true) },
			// The square c_proj left as HF stores it has the right shape and the
			// wrong values.
			brokenKeys: gpt2Keys,
		},
		{
			name:    "llama: LlamaForCausalLM published (tied), LlamaModel exported",
			source:  "huggingface/transformers models/llama/modeling_llama.py @ 00227283 base_model_prefix = \"model\"",
			model:   tiedLlama,
			export:  llamaBase,
			adapter: "hf",
			broken: func(m *hfModel) []fixture.Tensor {
				return swapValues(llamaBase(m), "layers.0.input_layernorm.weight", "layers.0.post_attention_layernorm.weight")
			},
			brokenKeys: []string{"model.layers.0.input_layernorm.weight", "model.layers.0.post_attention_layernorm.weight"},
		},
		{
			name:   "bert: BertModel published, BertForSequenceClassification exported",
			source: "huggingface/transformers models/bert/modeling_bert.py @ 8ec58104 base_model_prefix = \"bert\"",
			model:  bertBase,
			export: func(m *hfModel) []fixture.Tensor {
				out := reprefix(m.rest(), "", "bert.")
				return m.done(append(out, generate([]int{2, cvHidden}, func([]int) float32 { return 0.5 }).tensor("classifier.weight")))
			},
			adapter: "hf",
			// The classification head is new: transformers' base model drops it.
			want: []string{"error unexpected_key classifier.weight"},
			broken: func(m *hfModel) []fixture.Tensor {
				return swapValues(m.done(reprefix(m.rest(), "", "bert.")),
					"bert.encoder.layer.0.attention.self.query.weight", "bert.encoder.layer.0.attention.self.key.weight")
			},
			brokenKeys: []string{"encoder.layer.0.attention.self.query.weight", "encoder.layer.0.attention.self.key.weight"},
		},
		vlmOldToNew("llava"),
		vlmOldToNew("gemma3"),
		vlmOldToNew("mistral3"),
		{
			name:    "qwen2_vl: 4.52+ module names published, save_pretrained's names exported",
			source:  "huggingface/transformers models/qwen2_vl/modeling_qwen2_vl.py @ 7e7810ab Qwen2VLForConditionalGeneration._checkpoint_conversion_mapping",
			model:   func() *hfModel { return qwenVLNew("qwen2_vl") },
			export:  qwenVLSaved,
			adapter: "hf",
			broken: func(m *hfModel) []fixture.Tensor {
				return swapValues(qwenVLSaved(m), "visual.blocks.0.attn.qkv.weight", "visual.blocks.1.attn.qkv.weight")
			},
			brokenKeys: []string{"model.visual.blocks.0.attn.qkv.weight", "model.visual.blocks.1.attn.qkv.weight"},
		},
	})
}

// TestOverlapHintWorks follows low_key_overlap's advice: an export under a
// prefix that is not the model's base_model_prefix ("student.") gets the
// hint, and the flag it names gives a clean comparison, whose only warning
// is the needs_adapter the hint announces. A base-model prefix gets no
// hint at all: transformers loads it as it is.
func TestOverlapHintWorks(t *testing.T) {
	m := hfLlama("llama", 0)
	pub := writeHFModel(t, m)
	for _, tt := range []struct {
		prefix, flag string
	}{
		{"student.", "--strip-prefix student."},
		{"student.model.", "--strip-prefix student.model."},
	} {
		exp := export(t, reprefix(m.tensors(), "", tt.prefix), nil)
		opt := DiffOptions{WeightsOnly: true}
		d := diffPaths(t, pub, exp, opt)
		var hint string
		for _, f := range d.Findings {
			if f.Code == CodeLowKeyOverlap {
				hint = f.Message
			}
		}
		if !strings.Contains(hint, tt.flag) {
			t.Fatalf("%s: hint %q does not say %s", tt.prefix, hint, tt.flag)
		}
		opt.Exported.Extra = adapter.Chain{stripPrefix(tt.flag)}
		d = diffPaths(t, pub, exp, opt)
		var got []string
		for _, f := range d.Findings {
			got = append(got, string(f.Code))
		}
		if len(got) != 1 || got[0] != string(CodeNeedsAdapter) {
			t.Errorf("%s, following the hint: findings %v, want only needs_adapter", tt.prefix, got)
		}
	}
	// LlamaModel's own names, "model." stripped: no hint, no warning.
	d := diffPaths(t, pub, export(t, reprefix(m.tensors(), "model.", ""), nil), DiffOptions{WeightsOnly: true})
	for _, f := range d.Findings {
		if f.Code == CodeLowKeyOverlap || f.Code == CodeNeedsAdapter {
			t.Errorf("a base-model export: %s %s", f.Code, f.Message)
		}
	}
}

func stripPrefix(flag string) *adapter.Adapter {
	return adapter.StripPrefix(strings.TrimPrefix(flag, "--strip-prefix "))
}

// TestExplicitChainWrappersFirst is the README's --adapter
// exported=torchtitan-hf,compile on torchtitan's transformers backend
// compiled: model._orig_mod.model.layers... (torch.compile's _orig_mod
// segment inside HFTransformerModel.model).
func TestExplicitChainWrappersFirst(t *testing.T) {
	m := hfLlama("llama", 0)
	pub := writeHFModel(t, m)
	exp := export(t, reprefix(m.tensors(), "", "model._orig_mod."), nil)
	opt := DiffOptions{WeightsOnly: true, Exported: SideOptions{Chain: mustChain(t, "torchtitan-hf,compile"), Fixed: true}}
	d := diffPaths(t, pub, exp, opt)
	for _, f := range d.Findings {
		if f.Code != CodeNeedsAdapter {
			t.Errorf("%s %s %s", f.Code, f.Key, f.Message)
		}
	}
	if d.Exported.View.Adapter != "compile,torchtitan-hf" {
		t.Errorf("adapter %s", d.Exported.View.Adapter)
	}
}
