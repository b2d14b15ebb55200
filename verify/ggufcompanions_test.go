package verify

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ckptcheck/ckptcheck/checkpoint"
	"github.com/ckptcheck/ckptcheck/internal/fixture"
)

// A config.json beside a GGUF file is the Hugging Face weights', not the
// GGUF's: convert_hf_to_gguf.py writes the GGUF into the published folder,
// and diff published published/model.gguf reported each finding on the
// published config.json twice (once for each side) and a dtype mismatch
// of the GGUF's tensors against its torch_dtype. The findings on the
// files beside the weights come once, from the published side; validate
// of the GGUF judges the GGUF.
func TestGGUFBesideHFConfig(t *testing.T) {
	ts := tinyLlama()
	config := map[string]any{"model_type": "llama", "hidden_size": tinyHidden, "num_attention_heads": tinyHeads, "num_key_value_heads": tinyKV,
		"num_hidden_layers": 2, "vocab_size": tinyVocab, "tie_word_embeddings": "yes", "torch_dtype": "float32"}
	for _, tt := range []struct {
		name string
		// inPublished writes the GGUF into the published folder, else
		// into a folder of its own with a copy of config.json.
		inPublished bool
	}{
		{"in the published folder", true},
		{"beside a copy of config.json", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pub := export(t, tinyFixture(ts), config)
			must(t, fixture.WriteJSON(filepath.Join(pub, "tokenizer_config.json"), map[string]any{"eos_token": "</s>"}))
			dir := pub
			if !tt.inPublished {
				dir = t.TempDir()
				must(t, fixture.WriteJSON(filepath.Join(dir, "config.json"), config))
				must(t, fixture.WriteJSON(filepath.Join(dir, "tokenizer_config.json"), map[string]any{"eos_token": "</s>"}))
			}
			exp := filepath.Join(dir, "model.gguf")
			must(t, os.WriteFile(exp, tinyGGUFOf(ts, ggufEdit{}).Bytes(), 0o644))
			d := diffPaths(t, pub, exp, DiffOptions{})
			invalid := 0
			for _, f := range d.Findings {
				if f.Code == CodeConfigInvalid {
					invalid++
					if f.Side != Published {
						t.Errorf("%s on the %s side: %s", f.Code, f.Side, f.Message)
					}
				}
				if f.Code == CodeConfigMismatch || strings.HasSuffix(f.File, "config.json") && f.Side == Exported {
					t.Errorf("the GGUF judged by a config.json: %s %s %s", f.Code, f.File, f.Message)
				}
			}
			if invalid != 1 {
				t.Errorf("%d config_invalid findings, want the published side's one", invalid)
			}
			fs, err := Validate(t.Context(), openCheckpoint(t, exp))
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range fs {
				if strings.HasSuffix(f.File, "config.json") {
					t.Errorf("validate of the GGUF: %s %s %s", f.Code, f.File, f.Message)
				}
			}
		})
	}
}

// listCounter counts a source's listings.
type listCounter struct {
	checkpoint.Source
	lists atomic.Int32
}

func (l *listCounter) List(ctx context.Context) ([]checkpoint.Entry, error) {
	l.lists.Add(1)
	return l.Source.List(ctx)
}

// The published files beside the weights are listed (and, remote, looked
// at: a request each) once for a GGUF export, whose embedded tokenizer is
// compared with them as well as the files beside it; what the GGUF lacks
// is a finding on the GGUF file.
func TestGGUFCompanionsListedOnce(t *testing.T) {
	ts := tinyLlama()
	pub := export(t, tinyFixture(ts), map[string]any{"model_type": "llama", "torch_dtype": "float32"})
	must(t, fixture.WriteJSON(filepath.Join(pub, "tokenizer_config.json"), map[string]any{"eos_token": "</s>", "chat_template": "{{ x }}"}))
	exp := filepath.Join(t.TempDir(), "model.gguf")
	must(t, os.WriteFile(exp, tinyGGUFOf(ts, ggufEdit{}).Bytes(), 0o644))
	p := openCheckpoint(t, pub)
	counter := &listCounter{Source: p.Source}
	p.Source = counter
	// The export given as its folder: the dropped template is the file's.
	fs, err := CompareFiles(t.Context(), p, openCheckpoint(t, filepath.Dir(exp)), FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var codes []Code
	for _, f := range fs {
		codes = append(codes, f.Code)
		if f.Code == CodeTokenizerChanged && f.File != exp {
			t.Errorf("%s on %s, want on %s", f.Code, f.File, exp)
		}
	}
	if n := counter.lists.Load(); n != 1 || !slices.Equal(codes, []Code{CodeWeightsOnlyExport, CodeTokenizerChanged}) {
		t.Errorf("published side listed %d times, findings %v; want once, weights_only_export and the GGUF's tokenizer_changed", n, codes)
	}
}
