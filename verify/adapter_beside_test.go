package verify

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// torchtuneLoRA is the PEFT half of a torchtune LoRA epoch folder:
// FullModelHFCheckpointer.save_checkpoint (pytorch/torchtune
// torchtune/training/checkpointing/_checkpointer.py @ bd2a0fc7, 2026-04-23)
// writes the merged model with save_torch_state_dict into
// output_dir/epoch_{epoch}, then, into the same folder, adapter_model.pt,
// adapter_model.safetensors (convert_weights.tune_to_peft_adapter_weights:
// "base_model.model." + the HF name with lora_A.weight [r, in] and
// lora_B.weight [out, r]) and adapter_config.json
// (tune_to_peft_adapter_config: r, lora_alpha, target_modules, and
// base_model_name_or_path set to the repo id).
func torchtuneLoRA(t *testing.T, dir string) {
	t.Helper()
	const r = 4
	var lora []fixture.Tensor
	for i := range fixture.Tiny.Layers {
		m := fmt.Sprintf("base_model.model.model.layers.%d.self_attn.q_proj.", i)
		lora = append(lora, raw(m+"lora_A.weight", safetensors.F32, r, uint64(fixture.Tiny.Hidden)),
			raw(m+"lora_B.weight", safetensors.F32, uint64(fixture.Tiny.Heads*fixture.Tiny.HeadDim), r))
	}
	if err := fixture.WriteFile(filepath.Join(dir, "adapter_model.safetensors"), lora, map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
	cfg := `{"r": 4, "lora_alpha": 8, "target_modules": ["q_proj"], "peft_type": "LORA", "base_model_name_or_path": "Qwen/Qwen3-0.6B"}`
	if err := os.WriteFile(filepath.Join(dir, "adapter_config.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "adapter_model.pt"), []byte("torch zip"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestModelBesideAdapter: a folder holding the full model and, beside it,
// a PEFT adapter (torchtune's epoch_N of a LoRA run) is the model: it is
// compared, and an info finding mentions the adapter, never lora_adapter.
func TestModelBesideAdapter(t *testing.T) {
	pub := published(t)
	for _, side := range []Side{Exported, Published} {
		epoch := filepath.Join(t.TempDir(), "epoch_0")
		copyDir(t, pub, epoch)
		torchtuneLoRA(t, epoch)
		a, b := pub, epoch
		if side == Published {
			a, b = epoch, pub
		}
		d := diffPaths(t, a, b, DiffOptions{WeightsOnly: true})
		if got := codeList(d.Findings); !slices.Equal(got, []string{"adapter_beside"}) {
			t.Fatalf("%s side: findings %v", side, d.Findings)
		}
		f := d.Findings[0]
		if f.Severity != Info || f.Side != side || !strings.Contains(f.Message, "adapter_model.safetensors") || !strings.Contains(f.Message, "Qwen/Qwen3-0.6B") {
			t.Errorf("%s side: %+v", side, f)
		}
	}
	// A small model saved by save_torch_state_dict is one file and no
	// index: every .safetensors file of the folder is read, the adapter's
	// tensors with the model's. They are the adapter's, not unexpected keys,
	// and the model's values compare.
	m := hfLlama("qwen3", 0)
	epoch := export(t, m.tensors(), nil)
	torchtuneLoRA(t, epoch)
	d := diffPaths(t, writeHFModel(t, m), epoch, DiffOptions{WeightsOnly: true})
	if got := codeList(d.Findings); !slices.Equal(got, []string{"adapter_beside"}) {
		t.Fatalf("no index: findings %v", d.Findings)
	}
	if f := d.Findings[0]; !strings.Contains(f.Message, "a LoRA adapter for Qwen/Qwen3-0.6B (adapter_model.safetensors, adapter_config.json)") ||
		!strings.Contains(f.Message, fmt.Sprintf("holds %d low-rank pairs", fixture.Tiny.Layers)) {
		t.Errorf("no index: %+v", f)
	}
	rep, err := d.CompareValues(context.Background(), ValueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := len(d.Published.View.Tensors); len(rep.Findings) != 0 || rep.BitIdentical != want {
		t.Errorf("no index: %d bit-identical, want %d; %v", rep.BitIdentical, want, rep.Findings)
	}
	// Negative control: the model beside the adapter differs from the
	// published one; --values must say so.
	broken := m.clone()
	q := broken.t["model.layers.0.self_attn.q_proj.weight"]
	q.v = slices.Clone(q.v)
	q.v[0]++
	broken.t["model.layers.0.self_attn.q_proj.weight"] = q
	epoch = export(t, broken.tensors(), nil)
	torchtuneLoRA(t, epoch)
	d = diffPaths(t, writeHFModel(t, m), epoch, DiffOptions{WeightsOnly: true})
	rep, err = d.CompareValues(context.Background(), ValueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Findings) != 1 || rep.Findings[0].Key != "model.layers.0.self_attn.q_proj.weight" {
		t.Errorf("negative control: %v", rep.Findings)
	}
}
