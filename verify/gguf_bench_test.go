//go:build linux

package verify

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	w "github.com/ckptcheck/ckptcheck/internal/ggufwrite"
)

// BenchmarkValuesGGUF compares the fine-tune benchmarks' published BF16
// model with its GGUF conversion in Q8_0 and Q4_K (every matrix, norms
// F32), by the encoding's bound; BenchmarkValuesFineTune's bf16-bf16 is
// the time to hold it to (issue 25: at most 1.3×).
func BenchmarkValuesGGUF(b *testing.B) {
	pairs := finetuneFixtures(b)
	pub := pairs[0].pub
	for _, q := range []struct {
		name       string
		typ, ftype uint32
		quantize   func([]byte, []float32) []byte
	}{{"q8_0", 8, 7, w.AppendQ8_0}, {"q4_k", 12, 14, w.AppendQ4K}} {
		path := filepath.Join(finetuneDir, "model-"+q.name+".gguf")
		if _, err := os.Stat(path); err != nil {
			if err := w.WriteQwen3(path, benchModel, q.typ, q.ftype, q.quantize); err != nil {
				b.Fatal(err)
			}
		}
		st, err := os.Stat(pub)
		if err != nil {
			b.Fatal(err)
		}
		d := diffPaths(b, pub, path, DiffOptions{WeightsOnly: true})
		for _, k := range kernelSets() {
			b.Run(q.name+"/"+k.name, func(b *testing.B) {
				defer k.use()()
				b.SetBytes(2 * st.Size())
				cpu0 := cpuTime(syscall.RUSAGE_SELF)
				for b.Loop() {
					rep, err := d.CompareValues(context.Background(), ValueOptions{})
					if err != nil {
						b.Fatal(err)
					}
					if rep.Compared == 0 || len(rep.Findings) != 0 {
						b.Fatalf("compared %d, findings %v", rep.Compared, rep.Findings)
					}
				}
				b.ReportMetric(float64(cpuTime(syscall.RUSAGE_SELF)-cpu0)/1e6/float64(b.N), "cpu-ms/op")
			})
		}
	}
}
