package verify

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// BenchmarkLoRAvsValues times diff --lora against diff --values on one
// pair: 8 BF16 targets of 1024×1024, r = 16, every element changed; and
// the same adapter as DoRA (a lora_magnitude_vector a target), whose row
// check forms B·A row by row.
func BenchmarkLoRAvsValues(b *testing.B) {
	const n, r, targets = 1024, 16, 8
	baseDir, mergedDir, adDir, doraDir := b.TempDir(), b.TempDir(), b.TempDir(), b.TempDir()
	var base, merged, ad, mags []fixture.Tensor
	for i := range targets {
		path := fmt.Sprintf("model.layers.%d.mlp.up_proj", i)
		w := make([]float32, n*n)
		for j := range w {
			w[j] = float32(j%97) / 97
		}
		bw := fixture.Encode(w, safetensors.BF16)
		mw := append([]byte(nil), bw...)
		for j := 0; j < len(mw); j += 2 {
			mw[j] ^= 1
		}
		base = append(base, fixture.Tensor{Name: path + ".weight", DType: safetensors.BF16, Shape: []uint64{n, n}, Data: bw})
		merged = append(merged, fixture.Tensor{Name: path + ".weight", DType: safetensors.BF16, Shape: []uint64{n, n}, Data: mw})
		ad = append(ad,
			fixture.Tensor{Name: peftPrefix + path + ".lora_A.weight", DType: safetensors.BF16, Shape: []uint64{r, n}, Data: fixture.Encode(make([]float32, r*n), safetensors.BF16)},
			fixture.Tensor{Name: peftPrefix + path + ".lora_B.weight", DType: safetensors.BF16, Shape: []uint64{n, r}, Data: fixture.Encode(make([]float32, r*n), safetensors.BF16)})
		mags = append(mags, fixture.Tensor{Name: peftPrefix + path + ".lora_magnitude_vector", DType: safetensors.BF16, Shape: []uint64{n}, Data: fixture.Encode(make([]float32, n), safetensors.BF16)})
	}
	for dir, ts := range map[string][]fixture.Tensor{baseDir: base, mergedDir: merged} {
		if err := fixture.WriteFile(filepath.Join(dir, "model.safetensors"), ts, nil); err != nil {
			b.Fatal(err)
		}
	}
	if err := fixture.WriteFile(filepath.Join(adDir, "adapter_model.safetensors"), ad, nil); err != nil {
		b.Fatal(err)
	}
	if err := fixture.WriteFile(filepath.Join(doraDir, "adapter_model.safetensors"), append(ad, mags...), nil); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	pub, exp, adC, doraC := openCk(b, baseDir), openCk(b, mergedDir), openCk(b, adDir), openCk(b, doraDir)
	d, err := Diff(ctx, pub, exp, DiffOptions{WeightsOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("values", func(b *testing.B) {
		for b.Loop() {
			if _, err := d.CompareValues(ctx, ValueOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("lora", func(b *testing.B) {
		for b.Loop() {
			if _, err := d.CompareLoRA(ctx, adC, LoRAOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("dora", func(b *testing.B) {
		for b.Loop() {
			if _, err := d.CompareLoRA(ctx, doraC, LoRAOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
