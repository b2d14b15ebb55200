package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// loraDirs writes a base with one 8×8 weight, and a PEFT adapter of rank
// 2 for it (names as peft's save_and_load.py writes them).
func loraDirs(t *testing.T) (base, adapter string) {
	t.Helper()
	vals := func(n int, v float32) []float32 {
		out := make([]float32, n)
		for i := range out {
			out[i] = v * float32(i%5+1)
		}
		return out
	}
	base, adapter = t.TempDir(), t.TempDir()
	w := fixture.Tensor{Name: "model.layers.0.self_attn.q_proj.weight", DType: safetensors.BF16, Shape: []uint64{8, 8}, Data: fixture.Encode(vals(64, 0.25), safetensors.BF16)}
	if err := fixture.WriteFile(filepath.Join(base, "model.safetensors"), []fixture.Tensor{w}, nil); err != nil {
		t.Fatal(err)
	}
	p := "base_model.model.model.layers.0.self_attn.q_proj."
	ts := []fixture.Tensor{
		{Name: p + "lora_A.weight", DType: safetensors.BF16, Shape: []uint64{2, 8}, Data: fixture.Encode(vals(16, 0.5), safetensors.BF16)},
		{Name: p + "lora_B.weight", DType: safetensors.BF16, Shape: []uint64{8, 2}, Data: fixture.Encode(vals(16, 0.5), safetensors.BF16)},
	}
	if err := fixture.WriteFile(filepath.Join(adapter, "adapter_model.safetensors"), ts, nil); err != nil {
		t.Fatal(err)
	}
	cfg := map[string]any{"peft_type": "LORA", "r": 2, "lora_alpha": 4, "target_modules": []string{"q_proj"}, "base_model_name_or_path": "org/base"}
	if err := fixture.WriteJSON(filepath.Join(adapter, "adapter_config.json"), cfg); err != nil {
		t.Fatal(err)
	}
	return base, adapter
}

func TestLoRACommands(t *testing.T) {
	base, adapter := loraDirs(t)
	if code, out, errOut := ckptcheck(t, "validate", "--base", base, adapter); code != 0 {
		t.Errorf("validate --base: exit %d\n%s%s", code, out, errOut)
	}
	code, out, _ := ckptcheck(t, "diff", base, adapter)
	if code != 1 || !strings.Contains(out, "lora_adapter") || !strings.Contains(out, "diff --lora") {
		t.Errorf("diff BASE ADAPTER: exit %d\n%s", code, out)
	}
	// The base as its own merge: never merged.
	code, out, errOut := ckptcheck(t, "diff", "--format", "json", "--lora", adapter, base, base)
	if code != 1 {
		t.Fatalf("diff --lora: exit %d\n%s%s", code, out, errOut)
	}
	var rep struct {
		Inputs   []struct{ Side string }
		Findings []struct{ Code string }
		LoRA     struct{ Targets []struct{ Verdict string } } `json:"lora"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Inputs) != 3 || rep.Inputs[2].Side != "adapter" {
		t.Errorf("inputs %+v", rep.Inputs)
	}
	if len(rep.LoRA.Targets) != 1 || rep.LoRA.Targets[0].Verdict != "not_merged" {
		t.Errorf("targets %+v, findings %+v", rep.LoRA.Targets, rep.Findings)
	}
}

// TestLoRAPartitions: diff --lora --partition parts merge to the whole
// run's findings; a part of another adapter does not merge.
func TestLoRAPartitions(t *testing.T) {
	base, adapter := loraDirs(t)
	_, whole, _ := ckptcheck(t, "diff", "--lora", adapter, base, base)
	dir := t.TempDir()
	var parts []string
	for i := range 2 {
		code, out, stderr := ckptcheck(t, "diff", "--format", "json", "--partition", partSpec(i, 2), "--lora", adapter, base, base)
		if code == 2 {
			t.Fatalf("part %d: exit 2: %s", i, stderr)
		}
		path := filepath.Join(dir, partSpec(i, 2)[:1]+".json")
		if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		parts = append(parts, path)
	}
	code, merged, stderr := ckptcheck(t, append([]string{"merge"}, parts...)...)
	if code != 1 || !strings.Contains(merged, "lora_not_merged") {
		t.Fatalf("merge: exit %d: %s\n%s", code, stderr, merged)
	}
	for _, line := range strings.Split(whole, "\n") {
		if strings.Contains(line, "lora_") && !strings.Contains(merged, strings.TrimSpace(line)) {
			t.Errorf("the merge lacks %q:\n%s", line, merged)
		}
	}
	if code, _, stderr := ckptcheck(t, "diff", "--partition", "0/2", "--lora", adapter, base, base); code != 2 || !strings.Contains(stderr, "json") {
		t.Errorf("--partition without json: exit %d (%s)", code, stderr)
	}
	if code, _, stderr := ckptcheck(t, "diff", "--values", "--lora", adapter, base, base); code != 2 || !strings.Contains(stderr, "--values") {
		t.Errorf("--lora --values: exit %d (%s)", code, stderr)
	}
}
