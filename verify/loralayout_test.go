package verify

import (
	"strings"
	"testing"
)

// TestParseLoRAName: each layout's names (loralayout.go cites where they
// come from) map to the module's Hugging Face path and the pair's part.
func TestParseLoRAName(t *testing.T) {
	tests := []struct {
		name, path string
		part       byte
		layout     loraLayout
		ok         bool
	}{
		{"base_model.model.model.layers.3.self_attn.q_proj.lora_A.weight", "model.layers.3.self_attn.q_proj", 'A', layoutPEFT, true},
		{"base_model.model.model.layers.3.mlp.down_proj.lora_B.weight", "model.layers.3.mlp.down_proj", 'B', layoutPEFT, true},
		{"base_model.model.model.layers.3.mlp.down_proj.lora_magnitude_vector", "model.layers.3.mlp.down_proj", 'M', layoutPEFT, true},
		{"base_model.model.lm_head.weight", "", 0, layoutPEFT, false}, // a modules_to_save copy
		{"layers.12.attn.output_proj.lora_a.weight", "model.layers.12.self_attn.o_proj", 'A', layoutTorchtune, true},
		{"layers.0.mlp.w1.lora_b.weight", "model.layers.0.mlp.gate_proj", 'B', layoutTorchtune, true},
		{"layers.0.mlp.w3.lora_a.weight", "model.layers.0.mlp.up_proj", 'A', layoutTorchtune, true},
		{"layers.0.mlp.w2.magnitude", "model.layers.0.mlp.down_proj", 'M', layoutTorchtune, true},
		{"output.lora_a.weight", "lm_head", 'A', layoutTorchtune, true},
		{"layers.x.attn.q_proj.lora_a.weight", "", 'A', layoutTorchtune, false},
		{"layers.0.attn.unknown.lora_a.weight", "", 'A', layoutTorchtune, false},
		{"model.layers.5.self_attn.v_proj.lora_a", "model.layers.5.self_attn.v_proj", 'A', layoutMLX, true},
		{"model.layers.5.self_attn.v_proj.lora_b", "model.layers.5.self_attn.v_proj", 'B', layoutMLX, true},
		{"model.layers.5.self_attn.v_proj.weight", "", 0, layoutMLX, false},
	}
	for _, tc := range tests {
		p, ok := parseLoRAName(tc.name)
		if ok != tc.ok || (ok && (p.path != tc.path || p.part != tc.part || p.layout != tc.layout)) {
			t.Errorf("%s: %+v, %v; want %s %c %s %v", tc.name, p, ok, tc.path, tc.part, tc.layout, tc.ok)
		}
	}
}

// FuzzParseLoRAName: any name parses without a panic, and a pair's path
// is a prefix-free part of it.
func FuzzParseLoRAName(f *testing.F) {
	for _, s := range []string{"base_model.model.a.lora_A.weight", "layers.1.attn.q_proj.lora_b.weight", "x.lora_a", "output.magnitude", "layers..mlp.w1.lora_a.weight"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		p, ok := parseLoRAName(name)
		if ok && p.layout != layoutTorchtune && !strings.Contains(name, p.path) {
			t.Fatalf("%q: path %q is not in the name", name, p.path)
		}
	})
}
