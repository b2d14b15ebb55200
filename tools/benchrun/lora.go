package main

import (
	"fmt"
	"path/filepath"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// benchLoRA is the adapter of the lora scenario: r = 16 on every linear
// layer, alpha 32 (scale 2).
var benchLoRA = fixture.LoRA{Rank: 16, Alpha: 32, Seed: 22}

// loraScenarios time diff --lora (issue 22's target): the merge proof of a
// correctly merged model against diff --values of the same pair, in one
// run.
func loraScenarios(e env) []scenario {
	bin := e.bin
	file := func(dir, name string) string { return filepath.Join(dir, name+".safetensors") }
	return []scenario{{
		id: "lora",
		title: fmt.Sprintf("diff --lora of a correct merge of an r=16 adapter on every linear layer vs diff --values of the same pair "+
			"(%s shape, %s BF16 each; page cache warm)", e.denseName, size(e.dense, 2)),
		setup: func(dir string) error {
			if err := fixture.WriteStream(file(dir, "base"), e.dense, safetensors.BF16, nil); err != nil {
				return err
			}
			if err := benchLoRA.WriteAdapter(filepath.Join(dir, "adapter"), e.dense); err != nil {
				return err
			}
			return benchLoRA.WriteMerged(file(dir, "merged"), e.dense)
		},
		ours: func(dir string) [][]string {
			return [][]string{{bin, "diff", "--lora", filepath.Join(dir, "adapter"), file(dir, "base"), file(dir, "merged")}}
		},
		baselines: func(dir string) [][]string {
			return [][]string{{bin, "diff", "--values", "--rtol", "1e-1", file(dir, "base"), file(dir, "merged")}}
		},
		floor:  true,
		ratios: "diff --lora's time / diff --values's; the target is at most 1.3",
	}}
}
