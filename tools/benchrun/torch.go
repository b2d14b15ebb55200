package main

import (
	"fmt"
	"path/filepath"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// torchScenarios time PyTorch files: --values of a torch.save .bin
// against the same weights as safetensors, against cat of both files (the
// issue's target: at most 1.5 times cat's time, page cache warm).
func torchScenarios(e env) []scenario {
	bf16Size := size(e.dense, 2)
	bin := func(dir string) string { return filepath.Join(dir, "pytorch_model.bin") }
	st := func(dir string) string { return filepath.Join(dir, "model.safetensors") }
	return []scenario{{
		id: "values-torch",
		title: fmt.Sprintf("%s shape, %s BF16 as a torch.save zip .bin against the same weights as safetensors: "+
			"diff --values against cat of both (page cache warm)", e.denseName, bf16Size),
		setup: func(dir string) error {
			if err := fixture.WriteStream(st(dir), e.dense, safetensors.BF16, nil); err != nil {
				return err
			}
			return fixture.WriteTorchBin(bin(dir), e.dense)
		},
		ours: func(dir string) [][]string {
			return [][]string{{e.bin, "diff", "--values", bin(dir), st(dir)}}
		},
		baselines: func(dir string) [][]string {
			return [][]string{{"sh", "-c", "cat " + bin(dir) + " " + st(dir) + " > /dev/null"}}
		},
		floor: true,
	}}
}
