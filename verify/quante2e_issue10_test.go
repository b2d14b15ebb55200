package verify

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// TestQuantLayoutsDecode: every scheme of issue 10's fixtures
// (quantLayouts, which said quantized_unsupported) now decodes, so a
// dequantized export is compared by value rather than said once.
func TestQuantLayoutsDecode(t *testing.T) {
	norm := arangeRaw("model.norm.weight", safetensors.BF16, 8)
	for _, q := range quantLayouts {
		t.Run(q.name, func(t *testing.T) {
			cfg := map[string]any{"model_type": "llama"}
			for k, v := range q.config {
				cfg[k] = v
			}
			pub := filepath.Join(t.TempDir(), "published")
			if err := fixture.WriteSharded(pub, append([]fixture.Tensor{norm}, q.parts...), 1, cfg); err != nil {
				t.Fatal(err)
			}
			d := diffPaths(t, pub, export(t, []fixture.Tensor{norm, arangeRaw(qWeight, safetensors.BF16, 8, 64)}, nil), DiffOptions{WeightsOnly: true})
			if w, _ := d.Published.View.Tensor(qWeight); !decodes(w) {
				t.Fatalf("%s: %+v does not decode", q.source, w.Quant)
			}
			rep, err := d.CompareValues(context.Background(), ValueOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range rep.Tensors {
				if s.Key == qWeight && s.Quantization == nil {
					t.Errorf("%s: %+v not judged by its encoding", q.source, s)
				}
			}
			if rep.Compared != 2 {
				t.Errorf("%s: %d compared, want 2", q.source, rep.Compared)
			}
		})
	}
}
