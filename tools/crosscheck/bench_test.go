//go:build unix

package crosscheck

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	nlp "github.com/nlpodyssey/safetensors"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// BenchmarkValidateMoENlpodyssey is the baseline of verify's
// BenchmarkValidateMoE: the same shards (the Qwen3-30B-A3B-shaped sparse
// checkpoint: 16 shards, 18,867 tensors, 61 GB of holes) parsed by
// nlpodyssey/safetensors, which needs the whole file as a byte slice (mapped
// here, so only the header pages are touched).
func BenchmarkValidateMoENlpodyssey(b *testing.B) {
	dir := b.TempDir()
	if err := fixture.WriteSparse(dir, fixture.Qwen3MoE30B, safetensors.BF16, 16); err != nil {
		b.Fatal(err)
	}
	shards, _ := filepath.Glob(filepath.Join(dir, "*.safetensors"))
	for b.Loop() {
		n := 0
		for _, p := range shards {
			f, err := os.Open(p)
			if err != nil {
				b.Fatal(err)
			}
			st, _ := f.Stat()
			data, err := syscall.Mmap(int(f.Fd()), 0, int(st.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
			if err != nil {
				b.Fatal(err)
			}
			st2, err := nlp.Deserialize(data)
			if err != nil {
				b.Fatal(err)
			}
			n += st2.Len()
			syscall.Munmap(data)
			f.Close()
		}
		if want := len(fixture.Qwen3MoE30B.Specs()); n != want {
			b.Fatalf("%d tensors, want %d", n, want)
		}
	}
}
