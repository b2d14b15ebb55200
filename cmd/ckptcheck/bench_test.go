package main

import (
	"context"
	"io"
	"os"
	"testing"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// BenchmarkInspectMoE is `ckptcheck inspect` on the Qwen3-30B-A3B-shaped
// sparse checkpoint, output discarded.
func BenchmarkInspectMoE(b *testing.B) {
	dir := b.TempDir()
	if err := fixture.WriteSparse(dir, fixture.Qwen3MoE30B, safetensors.BF16, 16); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if code := run(context.Background(), []string{"ckptcheck", "inspect", dir}, io.Discard, os.Stderr); code != 0 {
			b.Fatal(code)
		}
	}
}

// BenchmarkDiffMoE is `ckptcheck diff` on two Qwen3-30B-A3B-shaped sparse
// checkpoints (BF16 published, F32 exported), text output discarded.
func BenchmarkDiffMoE(b *testing.B) {
	pub, exp := b.TempDir(), b.TempDir()
	if err := fixture.WriteSparse(pub, fixture.Qwen3MoE30B, safetensors.BF16, 16); err != nil {
		b.Fatal(err)
	}
	if err := fixture.WriteSparse(exp, fixture.Qwen3MoE30B, safetensors.F32, 16); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if code := run(context.Background(), []string{"ckptcheck", "diff", pub, exp}, io.Discard, os.Stderr); code != 0 {
			b.Fatal(code)
		}
	}
}
