package verify

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// TestPartitionsOfMoE splits diff --values of two Qwen3-30B-A3B-shaped
// checkpoints (18,867 tensors a side, headers only) into n = 1…16 parts:
// every tensor is in exactly one part, and for n ≤ 8 no part reads more
// than 1.3 times the mean.
func TestPartitionsOfMoE(t *testing.T) {
	if testing.Short() {
		t.Skip("writes two sparse 61 GB checkpoints")
	}
	dir := t.TempDir()
	for _, side := range []string{"pub", "exp"} {
		if err := fixture.WriteSparse(filepath.Join(dir, side), fixture.Qwen3MoE30B, safetensors.BF16, 16); err != nil {
			t.Fatal(err)
		}
	}
	d := diffPaths(t, filepath.Join(dir, "pub"), filepath.Join(dir, "exp"), DiffOptions{})
	items := d.ValueWork(ValuePolicy{})
	if len(items) != 18867 {
		t.Fatalf("%d work items, want 18,867", len(items))
	}
	var total int64
	for _, it := range items {
		total += it.Weight
	}
	if total != 2*61064245248 {
		t.Fatalf("%d bytes of work, want both sides' 61,064,245,248", total)
	}
	for n := 1; n <= 16; n++ {
		times := make([]int, len(items))
		loads := make([]int64, n)
		for i := range n {
			for k, in := range (Partition{Index: i, Count: n}).Select(items) {
				if in {
					times[k]++
					loads[i] += items[k].Weight
				}
			}
		}
		for k, c := range times {
			if c != 1 {
				t.Fatalf("n=%d: %s is in %d partitions", n, items[k].Name, c)
			}
		}
		mean := float64(total) / float64(n)
		if largest := float64(slices.Max(loads)); n <= 8 && largest > 1.3*mean {
			t.Errorf("n=%d: the largest partition reads %.0f bytes, %.2f× the mean", n, largest, largest/mean)
		}
	}
}
