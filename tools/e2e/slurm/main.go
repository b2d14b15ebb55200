// Command slurm is the Go half of the end-to-end tests that run ckptcheck
// under a real job engine (make e2e-slurm): it writes the checkpoint pair
// the jobs compare, and checks that a merged report equals a single run's.
//
// Usage:
//
//	go -C tools run ./e2e/slurm pair DIR  writes DIR/published and DIR/exported
//	go -C tools run ./e2e/slurm same MERGED SINGLE
//
// same exits 1, printing the first difference, unless the two JSON reports
// hold the same result: everything but how the report was made (merged,
// partition) and the bytes read, which merge may count differently.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/safetensors"
	"github.com/ckptcheck/ckptcheck/verify"
)

func main() {
	var err error
	switch {
	case len(os.Args) == 3 && os.Args[1] == "pair":
		err = writePair(os.Args[2])
	case len(os.Args) == 4 && os.Args[1] == "same":
		err = same(os.Args[2], os.Args[3])
	default:
		err = fmt.Errorf("usage: slurm pair DIR | slurm same MERGED.json SINGLE.json")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
}

// model is a small Qwen3 MoE: 8 experts a layer, a few MB in BF16.
var model = fixture.Qwen3{Vocab: 2048, Hidden: 256, Layers: 4, Intermediate: 512, Heads: 4, KVHeads: 2, HeadDim: 64,
	Experts: 8, MoEIntermediate: 128, Tied: true, Seed: 14}

// writePair writes a published checkpoint and a fine-tune of it with a
// finding of each kind merge must carry: one norm lost on the way (partition
// 0's structural finding), tensors moved within a 1e-2 tolerance, some left
// bit-identical (the unchanged summary), one moved beyond it, and a copy of
// the tied head that drifted from the embedding.
func writePair(dir string) error {
	if err := fixture.WriteSharded(filepath.Join(dir, "published"), model.Tensors(safetensors.BF16), 3, model.Config("bfloat16")); err != nil {
		return err
	}
	var out []fixture.Tensor
	for i, t := range model.Tensors(safetensors.BF16) {
		switch {
		case t.Name == "model.layers.1.self_attn.k_norm.weight":
			continue
		case t.Name == "model.layers.2.mlp.experts.3.up_proj.weight":
			out = append(out, fixture.Perturb(t, safetensors.BF16, 0.2, uint64(i)))
		case i%5 == 0:
			out = append(out, t)
		default:
			out = append(out, fixture.Perturb(t, safetensors.BF16, 1e-3, uint64(i)))
		}
		if t.Name == "model.embed_tokens.weight" {
			head := fixture.Perturb(t, safetensors.BF16, 1e-3, 99)
			head.Name = verify.LMHead
			out = append(out, head)
		}
	}
	return fixture.WriteSharded(filepath.Join(dir, "exported"), out, 2, model.Config("bfloat16"))
}

func same(mergedPath, singlePath string) error {
	merged, err := normalized(mergedPath)
	if err != nil {
		return err
	}
	single, err := normalized(singlePath)
	if err != nil {
		return err
	}
	if merged == single {
		return nil
	}
	m, s := strings.Split(merged, "\n"), strings.Split(single, "\n")
	for i := range min(len(m), len(s)) {
		if m[i] != s[i] {
			return fmt.Errorf("the merged report differs from the single run's at line %d:\n  merged: %s\n  single: %s", i+1, m[i], s[i])
		}
	}
	return fmt.Errorf("the merged report has %d lines, the single run's %d", len(m), len(s))
}

// normalized is a report as JSON without what may differ between a merged
// report and a single run's; the report must read back as a ckptcheck
// report first.
func normalized(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	if _, err := verify.ReadReport(strings.NewReader(string(b))); err != nil {
		return "", fmt.Errorf("%s: %v", path, err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		return "", fmt.Errorf("%s: %v", path, err)
	}
	delete(doc, "merged")
	delete(doc, "partition")
	values, ok := doc["values"].(map[string]any)
	if !ok {
		return "", fmt.Errorf("%s: no values: not a diff --values report", path)
	}
	delete(values, "bytes_read")
	out, err := json.MarshalIndent(doc, "", "  ")
	return string(out), err
}
