package verify

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// mlxLoRA writes an mlx-lm LoRA training folder as ml-explore/mlx-lm
// @ d78bf58e (2026-08-22) writes it: mlx_lm/lora.py saves
// save_config(vars(args), adapter_path / "adapter_config.json") (its own
// keys: "model", "fine_tune_type": "lora", "num_layers",
// "lora_parameters": {"rank", "dropout", "scale"}); mlx_lm/tuner/trainer.py
// saves dict(tree_flatten(model.trainable_parameters())) every
// steps_per_save iterations to adapters.safetensors and to
// f"{it:07d}_adapters.safetensors", and at the end to adapters.safetensors
// again; mlx_lm/tuner/lora.py LoRALinear's lora_a is [input_dims, r],
// lora_b [r, output_dims], named <module>.lora_a / .lora_b (no .weight).
func mlxLoRA(t *testing.T, withConfig bool) string {
	t.Helper()
	const r = 8
	dir := filepath.Join(t.TempDir(), "adapters")
	var lora []fixture.Tensor
	for i := range fixture.Tiny.Layers {
		m := fmt.Sprintf("model.layers.%d.self_attn.q_proj.", i)
		lora = append(lora, raw(m+"lora_a", safetensors.F32, uint64(fixture.Tiny.Hidden), r),
			raw(m+"lora_b", safetensors.F32, r, uint64(fixture.Tiny.Heads*fixture.Tiny.HeadDim)))
	}
	for _, name := range []string{"adapters.safetensors", "0000100_adapters.safetensors", "0000200_adapters.safetensors"} {
		if err := fixture.WriteFile(filepath.Join(dir, name), lora, map[string]string{"format": "mlx"}); err != nil {
			t.Fatal(err)
		}
	}
	if withConfig {
		cfg := `{"model": "Qwen/Qwen3-0.6B", "train": true, "fine_tune_type": "lora", "num_layers": 16, "adapter_path": "adapters",
			"lora_parameters": {"rank": 8, "dropout": 0.0, "scale": 20.0}, "iters": 200, "save_every": 100}`
		if err := os.WriteFile(filepath.Join(dir, "adapter_config.json"), []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestMLXLoRAAdapter: an mlx-lm LoRA output folder is one lora_adapter
// finding naming the base model (the config's "model"), not duplicate keys
// between the periodic files nor every base weight missing.
func TestMLXLoRAAdapter(t *testing.T) {
	for _, withConfig := range []bool{true, false} {
		d := diffPaths(t, published(t), mlxLoRA(t, withConfig), DiffOptions{WeightsOnly: true})
		if got := codeList(d.Findings); !slices.Equal(got, []string{"lora_adapter"}) {
			t.Fatalf("config %v: findings %v", withConfig, d.Findings)
		}
		f := d.Findings[0]
		want := []string{"an mlx-lm LoRA adapter", "mlx_lm.fuse", fmt.Sprintf("%d low-rank pairs", fixture.Tiny.Layers)}
		if withConfig {
			want = append(want, "for Qwen/Qwen3-0.6B", "of rank 8")
		}
		for _, w := range want {
			if f.Severity != Error || f.Side != Exported || !strings.Contains(f.Message, w) {
				t.Errorf("config %v: want %q in %+v", withConfig, w, f)
			}
		}
	}
}
