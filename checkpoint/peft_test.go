package checkpoint_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/checkpoint"
)

// TestPEFTConfig: adapter_config.json as huggingface/peft writes it
// (src/peft/config.py, tuners/lora/config.py @ v0.20.0 a5526d27) is read
// with the checkpoint; absent, PEFT is nil.
func TestPEFTConfig(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "adapter_model.safetensors"), vec("base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight", 4))
	cfg := `{"peft_type": "LORA", "task_type": "CAUSAL_LM", "base_model_name_or_path": "Qwen/Qwen3-0.6B", "r": 8, "lora_alpha": 16,
	         "target_modules": ["q_proj", "v_proj"], "revision": null}`
	os.WriteFile(filepath.Join(dir, "adapter_config.json"), []byte(cfg), 0o644)
	c := open(t, dir, checkpoint.Options{})
	if p := c.PEFT; p == nil || c.PEFTErr != nil || p.PEFTType != "LORA" || p.BaseModel != "Qwen/Qwen3-0.6B" || p.Rank != 8 ||
		p.Path != filepath.Join(dir, "adapter_config.json") {
		t.Errorf("PEFT = %+v", p)
	}
	other := t.TempDir()
	writeFile(t, filepath.Join(other, "model.safetensors"), vec("x", 1))
	if c := open(t, other, checkpoint.Options{}); c.PEFT != nil {
		t.Errorf("no adapter_config.json, PEFT = %+v", c.PEFT)
	}
}

func TestParsePEFTConfig(t *testing.T) {
	tests := []struct {
		in   string
		want checkpoint.PEFTConfig
		err  bool
	}{
		{`{"peft_type":"LORA","base_model_name_or_path":null,"r":16}`, checkpoint.PEFTConfig{PEFTType: "LORA", Rank: 16}, false},
		{`{"peft_type":7,"base_model_name_or_path":["x"],"r":-1}`, checkpoint.PEFTConfig{}, false},
		// mlx-lm's own keys (ml-explore/mlx-lm mlx_lm/lora.py CONFIG_DEFAULTS @ d78bf58e)
		{`{"model":"Qwen/Qwen3-0.6b","fine_tune_type":"lora","num_layers":16,"lora_parameters":{"rank":8,"dropout":0.0,"scale":20.0}}`,
			checkpoint.PEFTConfig{PEFTType: "lora", BaseModel: "Qwen/Qwen3-0.6b", Rank: 8, Trainer: "mlx-lm"}, false},
		{`{"model":3,"lora_parameters":null}`, checkpoint.PEFTConfig{Trainer: "mlx-lm"}, false},
		{`[1]`, checkpoint.PEFTConfig{}, true},
		{`{`, checkpoint.PEFTConfig{}, true},
	}
	for _, tt := range tests {
		p, err := checkpoint.ParsePEFTConfig([]byte(tt.in))
		if (err != nil) != tt.err || (err == nil) != (p != nil) {
			t.Errorf("%s: %+v, %v", tt.in, p, err)
			continue
		}
		if err != nil && strings.Contains(err.Error(), "Go ") {
			t.Errorf("%s: error names Go types: %v", tt.in, err)
		}
		if p != nil && (p.PEFTType != tt.want.PEFTType || p.BaseModel != tt.want.BaseModel || p.Rank != tt.want.Rank) {
			t.Errorf("%s: %+v", tt.in, p)
		}
	}
}

func FuzzParsePEFTConfig(f *testing.F) {
	f.Add([]byte(`{"peft_type":"LORA","base_model_name_or_path":"org/base","r":8}`))
	f.Add([]byte(`{"r":18446744073709551616}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := checkpoint.ParsePEFTConfig(b)
		if (p == nil) == (err == nil) {
			t.Fatalf("config %+v with error %v: want exactly one", p, err)
		}
	})
}

// TestTieDefaults: a config without tie_word_embeddings means the model
// class's default, as transformers declares it: false for Llama, Qwen,
// Mistral and Mixtral, true for Gemma, and the base class's true for the
// rest.
func TestTieDefaults(t *testing.T) {
	tests := []struct {
		modelType string
		tied, own bool
	}{
		{"llama", false, true}, {"qwen2", false, true}, {"qwen3", false, true}, {"qwen3_moe", false, true},
		{"mistral", false, true}, {"mixtral", false, true}, {"gemma", true, true}, {"gemma2", true, true},
		{"gpt2", true, false}, {"", true, false},
	}
	for _, tt := range tests {
		d, own := checkpoint.TieDefaultOf(tt.modelType)
		if d.Tied != tt.tied || own != tt.own || !strings.HasPrefix(d.Source, "src/transformers/") {
			t.Errorf("%q: %+v %v", tt.modelType, d, own)
		}
	}
}
