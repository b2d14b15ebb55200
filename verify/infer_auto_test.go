package verify

import (
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
)

// trainerNames renames an HF llama's tensors the way a trainer with its
// own module names might: no preset knows them.
func trainerNames(ts []fixture.Tensor) []fixture.Tensor {
	r := strings.NewReplacer("model.layers.", "net.blocks.", "self_attn.", "attn.", "q_proj", "query", "k_proj", "key",
		"v_proj", "value", "o_proj", "out", "mlp.", "ffn.", "gate_proj", "w1", "up_proj", "w3", "down_proj", "w2",
		"input_layernorm", "norm1", "post_attention_layernorm", "norm2", "model.embed_tokens", "net.embed", "model.norm", "net.norm")
	for i := range ts {
		ts[i].Name = r.Replace(ts[i].Name)
	}
	return ts
}

// TestAutoFallsBackToInference: no preset reaches half of the published
// keys, so auto infers from the headers alone. Templates of equal shape
// (q vs o, gate vs up; in this tiny model, most) stay unmapped, and inference_ambiguous says values
// would settle them; --adapter exported=infer does.
func TestAutoFallsBackToInference(t *testing.T) {
	m := hfLlama("llama", 0)
	pub := writeHFModel(t, m)
	exp := export(t, trainerNames(m.tensors()), nil)
	d := diffPaths(t, pub, exp, DiffOptions{WeightsOnly: true})
	if d.Inference == nil {
		t.Fatalf("auto did not fall back to inference: adapter %s, findings %v", d.Exported.View.Adapter, codesOf(d.Findings))
	}
	if r := d.Inference.Report(); r.Settled || r.SampleBytes != 0 {
		t.Errorf("auto read values: %+v", r)
	}
	if matched := len(matchedKeys(d)); matched == 0 {
		t.Errorf("inference matched nothing\n%s", d.Inference.Text())
	}
	var amb string
	for _, f := range d.Findings {
		switch f.Code {
		case CodeInferAmbiguous:
			amb = f.Message
		}
	}
	// Tiny shapes leave most templates open; the finding names them with
	// their candidate counts, not the candidates.
	if !strings.Contains(amb, "--adapter exported=infer") || !strings.Contains(amb, "net.blocks.{}.attn.query.weight [16, 8] x2 (11 candidates)") || len(amb) > 1000 {
		t.Errorf("inference_ambiguous %q does not say what settles it", amb)
	}
	// Header-only: the same headers give the same mapping.
	if again := diffPaths(t, pub, exp, DiffOptions{WeightsOnly: true}); again.Inference.Text() != d.Inference.Text() {
		t.Error("auto's inference is not deterministic")
	}
	full := diffPaths(t, pub, exp, DiffOptions{WeightsOnly: true, Exported: SideOptions{Infer: true}})
	if got := len(matchedKeys(full)); got != len(d.Published.View.Tensors) {
		t.Errorf("with values: %d of %d keys\n%s", got, len(d.Published.View.Tensors), full.Inference.Text())
	}
	for _, f := range full.Findings {
		if f.Code == CodeInferAmbiguous {
			t.Errorf("values left ambiguities: %s", f.Message)
		}
	}
}

// TestAutoNoInferenceWhenPresetMatches: a preset that reaches half of the
// published keys is kept, and inference does not run at all.
func TestAutoNoInferenceWhenPresetMatches(t *testing.T) {
	m := hfLlama("qwen3_moe", 12)
	pub := writeHFModel(t, m)
	exp := export(t, ttQwen3(m.clone(), ttOpts{g: ttG1, experts: 12}), nil)
	d := diffPaths(t, pub, exp, DiffOptions{WeightsOnly: true})
	if d.Inference != nil || d.Exported.View.Adapter != "torchtitan-qwen3" {
		t.Errorf("auto chose %s, inference %v", d.Exported.View.Adapter, d.Inference != nil)
	}
}
