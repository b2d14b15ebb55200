package partition_test

import (
	"fmt"

	"github.com/ckptcheck/ckptcheck/partition"
)

// Assign shares out any weighted work: here a checkpoint's files by size,
// as hashing them for a manifest would.
func ExampleAssign() {
	files := []partition.Item{
		{Name: "model-00001-of-00004.safetensors", Weight: 4_900},
		{Name: "model-00002-of-00004.safetensors", Weight: 4_900},
		{Name: "model-00003-of-00004.safetensors", Weight: 4_200},
		{Name: "model-00004-of-00004.safetensors", Weight: 1_100},
		{Name: "tokenizer.json", Weight: 11},
	}
	bins := partition.Assign(files, 2)
	for i, f := range files {
		fmt.Println(bins[i], f.Name)
	}
	// Output:
	// 0 model-00001-of-00004.safetensors
	// 1 model-00002-of-00004.safetensors
	// 0 model-00003-of-00004.safetensors
	// 1 model-00004-of-00004.safetensors
	// 1 tokenizer.json
}

func ExampleParsePartition() {
	// As in the third task of a Slurm array started with --array=1-4.
	env := map[string]string{"SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_STEP": "1", "SLURM_ARRAY_TASK_COUNT": "4"}
	p, err := partition.ParsePartition("auto/4", func(k string) string { return env[k] })
	fmt.Println(p, err)
	fmt.Println(p.From)
	// Output:
	// 2/4 <nil>
	// SLURM_ARRAY_TASK_ID=3 (SLURM_ARRAY_TASK_MIN=1, SLURM_ARRAY_TASK_STEP=1)
}
