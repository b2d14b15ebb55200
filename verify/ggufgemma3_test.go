package verify

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestDiffGGUFGemma3Multimodal: a Gemma 3 multimodal checkpoint
// (Gemma3ForConditionalGeneration: the text model under language_model.model.*
// in the Hub files, model.language_model.* in the module tree's names, and a
// vision tower and projector) against the text GGUF llama.cpp converts from
// it. gguf-gemma3, chosen by model_type, maps the text model, norms read
// back from w+1; the vision tower and projector, which the converter writes
// to a separate mmproj file, are one adapter_absent each, not a missing key
// a tensor (--explain says why). A text tensor left out is still a
// missing key.
func TestDiffGGUFGemma3Multimodal(t *testing.T) {
	text := tinyGemma2()
	rng := rand.New(rand.NewPCG(25, 8))
	vision := []hfTensor{
		tinyTensor(rng, "vision_tower.vision_model.embeddings.patch_embedding.weight", "", 0, 32, 3, 2, 2),
		tinyTensor(rng, "vision_tower.vision_model.encoder.layers.0.self_attn.q_proj.weight", "", 0, 32, 32),
		tinyTensor(rng, "vision_tower.vision_model.post_layernorm.weight", "", 1, 32),
		tinyTensor(rng, "multi_modal_projector.mm_input_projection_weight", "", 0, 32, tinyHidden),
		tinyTensor(rng, "multi_modal_projector.mm_soft_emb_norm.weight", "", 0, 32)}
	for _, tt := range []struct {
		name, text, vision string // the prefixes of the text model and of the vision names
		drop               string
		want               []string
	}{
		{"hub names", "language_model.model.", "", "", nil},
		{"module names", "model.language_model.", "model.", "", nil},
		{"missing", "language_model.model.", "", "blk.1.post_ffw_norm.weight",
			[]string{"missing_key language_model.model.layers.1.post_feedforward_layernorm.weight"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var pubTensors []hfTensor
			for _, h := range text {
				h.name = tt.text + strings.TrimPrefix(h.name, "model.")
				pubTensors = append(pubTensors, h)
			}
			var visionKeys, projectorKeys []string
			for _, h := range vision {
				h.name = tt.vision + h.name
				pubTensors = append(pubTensors, h)
				if strings.Contains(h.name, "vision_tower.") {
					visionKeys = append(visionKeys, h.name)
				} else {
					projectorKeys = append(projectorKeys, h.name)
				}
			}
			textConfig := map[string]any{"model_type": "gemma3_text", "hidden_size": tinyHidden, "num_attention_heads": tinyHeads,
				"num_key_value_heads": tinyKV, "head_dim": 32, "num_hidden_layers": 2, "intermediate_size": tinyFF, "vocab_size": tinyVocab}
			pub := export(t, tinyFixture(pubTensors), map[string]any{"model_type": "gemma3", "architectures": []string{"Gemma3ForConditionalGeneration"},
				"text_config": textConfig, "vision_config": map[string]any{"model_type": "siglip_vision_model", "hidden_size": 32},
				"tie_word_embeddings": true, "torch_dtype": "float32"})
			exp := filepath.Join(t.TempDir(), "model.gguf")
			must(t, os.WriteFile(exp, tinyGGUFOf(text, ggufEdit{arch: "gemma3", unpermuted: true, normShift: 1, drop: tt.drop}).Bytes(), 0o644))
			got, rep := ggufErrors(t, pub, exp, "gguf-gemma3")
			if want := slices.Sorted(slices.Values(tt.want)); !slices.Equal(got, want) {
				t.Errorf("errors %q, want %q", got, want)
			}
			if compared := len(text); tt.drop == "" && (rep.Compared != compared || rep.Mismatched != 0) {
				t.Errorf("compared %d (want %d), mismatched %d", rep.Compared, compared, rep.Mismatched)
			}
			d := checkAbsent(t, pub, exp, map[string][]string{tt.vision + "vision_tower.*": visionKeys, tt.vision + "multi_modal_projector.*": projectorKeys})
			// --explain says why the export has no such tensor.
			if ex := d.Explain(visionKeys[0]); len(ex.Sides) != 2 || ex.Sides[1].Logical != nil ||
				!slices.ContainsFunc(ex.Sides[1].From, func(s string) bool { return strings.HasPrefix(s, "is absent from this side: the vision tower") }) {
				t.Errorf("explain %s: %+v", visionKeys[0], ex.Sides)
			}
		})
	}
}
