package verify

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/checkpoint"
)

func config(t *testing.T, s string) *checkpoint.Config {
	t.Helper()
	c, err := checkpoint.ParseConfig([]byte(s))
	if err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	c.Path = "exported/config.json"
	return c
}

// The v5 forms follow transformers v5's RotaryEmbeddingConfigMixin
// (src/transformers/modeling_rope_utils.py: convert_rope_params_to_dict,
// standardize_rope_params) and Gemma 3's per-layer-type conversion
// (models/gemma3/configuration_gemma3.py), which write what v4 wrote as
// rope_scaling + rope_theta as rope_parameters.
func TestCompareConfigsNormalisesV5(t *testing.T) {
	tests := []struct{ name, v4, v5 string }{
		{"dtype and a plain rope",
			`{"torch_dtype": "bfloat16", "rope_theta": 1000000, "rope_scaling": null, "transformers_version": "4.51.0", "_name_or_path": "/tmp/x", "rms_norm_eps": 1e-06}`,
			`{"dtype": "bfloat16", "rope_parameters": {"rope_type": "default", "rope_theta": 1000000.0}, "transformers_version": "5.0.0", "rms_norm_eps": 0.000001}`},
		{"llama 3.1",
			`{"max_position_embeddings": 131072, "rope_theta": 500000.0, "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192, "rope_type": "llama3"}}`,
			`{"max_position_embeddings": 131072, "rope_parameters": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192, "rope_type": "llama3", "rope_theta": 500000.0}}`},
		{"yarn written with type, max length filled in",
			`{"max_position_embeddings": 32768, "rope_theta": 1000000, "rope_scaling": {"type": "yarn", "factor": 4}}`,
			`{"max_position_embeddings": 32768, "rope_parameters": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768, "rope_theta": 1000000.0}}`},
		{"partial rotary factor moves inside",
			`{"rope_theta": 10000, "partial_rotary_factor": 0.5}`,
			`{"rope_parameters": {"rope_type": "default", "rope_theta": 10000, "partial_rotary_factor": 0.5}}`},
		{"gemma 3: per layer type",
			`{"layer_types": ["sliding_attention", "full_attention"], "rope_theta": 1000000.0, "rope_local_base_freq": 10000.0, "rope_scaling": {"factor": 8.0, "rope_type": "linear"}}`,
			`{"layer_types": ["sliding_attention", "full_attention"], "rope_parameters": {"full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1000000.0}, "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}}}`},
		{"sub-configs too",
			`{"text_config": {"torch_dtype": "torch.bfloat16", "rope_theta": 5000000}, "eos_token_id": [1, 106]}`,
			`{"text_config": {"dtype": "bfloat16", "rope_parameters": {"rope_type": "default", "rope_theta": 5000000}}, "eos_token_id": [106, 1]}`},
	}
	for _, tt := range tests {
		for _, pair := range [][2]string{{tt.v4, tt.v5}, {tt.v5, tt.v4}, {tt.v4, tt.v4}, {tt.v5, tt.v5}} {
			if fs := compareConfigs(config(t, pair[0]), config(t, pair[1])); len(fs) != 0 {
				t.Errorf("%s: %s vs %s:\n%v", tt.name, pair[0], pair[1], fs)
			}
		}
	}
}

func TestCompareConfigsFindsChanges(t *testing.T) {
	base := `{"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "num_hidden_layers": 28, "hidden_size": 1024,
		"rope_theta": 1000000, "rms_norm_eps": 1e-06, "use_cache": true, "torch_dtype": "bfloat16", "eos_token_id": 151645,
		"max_position_embeddings": 40960, "text_config": {"hidden_size": 8}}`
	tests := []struct {
		name, edit string
		want       []string // "severity code key"
	}{
		{"rope theta", `{"rope_parameters": {"rope_type": "default", "rope_theta": 500000}}`, []string{"warning config_changed rope_parameters.rope_theta"}},
		{"layers and a bookkeeping field", `{"num_hidden_layers": 24, "transformers_version": "5.1"}`, []string{"warning config_changed num_hidden_layers"}},
		{"epsilon", `{"rms_norm_eps": 1e-05}`, []string{"warning config_changed rms_norm_eps"}},
		{"use_cache is no architecture", `{"use_cache": false}`, []string{"info config_changed use_cache"}},
		{"dtype of the export", `{"torch_dtype": null, "dtype": "float32"}`, []string{"info config_changed dtype"}},
		{"eos", `{"eos_token_id": [151645, 151643]}`, []string{"warning tokenizer_changed eos_token_id"}},
		{"tie set on one side only", `{"tie_word_embeddings": false}`, []string{"warning config_changed tie_word_embeddings"}},
		{"quantized export", `{"quantization_config": {"bits": 4, "quant_method": "gptq"}}`, []string{"warning config_changed quantization_config"}},
		{"a field v5 spells out", `{"layer_types": ["full_attention"]}`, []string{"info config_changed layer_types"}},
		{"nested size", `{"text_config": {"hidden_size": 16}}`, []string{"warning config_changed text_config.hidden_size"}},
		{"context length", `{"max_position_embeddings": 32768}`, []string{"warning config_changed max_position_embeddings"}},
		{"architecture", `{"architectures": ["Qwen3MoeForCausalLM"]}`, []string{"warning config_changed architectures"}},
	}
	for _, tt := range tests {
		var a, b map[string]any
		json.Unmarshal([]byte(base), &a)
		b = map[string]any{}
		json.Unmarshal([]byte(base), &b)
		var edit map[string]any
		if err := json.Unmarshal([]byte(tt.edit), &edit); err != nil {
			t.Fatal(err)
		}
		for k, v := range edit {
			if k == "rope_parameters" {
				delete(b, "rope_theta")
			}
			b[k] = v
		}
		eb, _ := json.Marshal(b)
		var got []string
		for _, f := range compareConfigs(config(t, base), config(t, string(eb))) {
			got = append(got, fmt.Sprintf("%s %s %s", f.Severity, f.Code, f.Key))
			if f.Message == "" || f.File != "exported/config.json" {
				t.Errorf("%s: %+v", tt.name, f)
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s:\n  %s\nwant\n  %s", tt.name, strings.Join(got, "\n  "), strings.Join(tt.want, "\n  "))
		}
	}
}

func TestChangeMessage(t *testing.T) {
	fs := compareConfigs(config(t, `{"rope_theta": 10000, "vocab_size": 151936}`), config(t, `{"rope_theta": 500000, "use_cache": true}`))
	var msgs []string
	for _, f := range fs {
		msgs = append(msgs, f.Key+": "+f.Message)
	}
	want := []string{"rope_parameters.rope_theta: 10000 → 500000", "use_cache: only in the exported file: true", "vocab_size: only in the published file: 151936"}
	if !slices.Equal(msgs, want) {
		t.Errorf("%q", msgs)
	}
}
