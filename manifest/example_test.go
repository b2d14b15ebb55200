package manifest_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ckptcheck/ckptcheck/checkpoint"
	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/manifest"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// A manifest recorded from one checkpoint matches the same tensors sharded
// another way.
func ExampleCompare() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	tensors := fixture.Tiny.Tensors(safetensors.BF16)
	fixture.WriteSharded(filepath.Join(dir, "a"), tensors, 3, fixture.Tiny.Config("bfloat16"))
	fixture.WriteSharded(filepath.Join(dir, "b"), tensors, 2, fixture.Tiny.Config("bfloat16"))

	ctx := context.Background()
	build := func(path string) (*manifest.Manifest, *checkpoint.Checkpoint) {
		c, _ := checkpoint.Open(ctx, path, checkpoint.Options{})
		files, _ := manifest.Work(ctx, c) // a partitioned run would take a subset
		m, _ := manifest.Build(ctx, c, files, manifest.Options{Tool: "example"})
		return m, c
	}
	recorded, a := build(filepath.Join(dir, "a"))
	defer a.Close()
	now, b := build(filepath.Join(dir, "b"))
	defer b.Close()
	fmt.Println(len(recorded.Files), "files,", len(recorded.Tensors), "tensors")
	for _, f := range manifest.Compare(recorded, now, b.Source.Path) {
		fmt.Println(f.Severity, f.Code)
	}
	// Output:
	// 5 files, 46 tensors
	// info manifest_shards_differ
}
