package values

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/ckptcheck/ckptcheck/safetensors"
)

// BenchmarkRunInterleaved times a whole Run of an operand read from two
// tensors in turn (gpt-oss's gate_up_proj from llama.cpp's ffn_gate_exps
// and ffn_up_exps) against the one tensor they make, from a file, two
// workers: rows of 4 KiB read transposed, as the preset reads them, and
// units of one value (its bias); beside each, the same operand stored
// whole, for what the interleave costs. ns/elem is a logical element.
func BenchmarkRunInterleaved(b *testing.B) {
	const experts, rows, cols = 4, 1024, 1024 // each way [experts, rows, cols]
	n := experts * rows * cols
	gate, up := make([]float32, n), make([]float32, n)
	for i := range gate {
		gate[i], up[i] = float32(i%977)/977, float32(i%1009)/1009
	}
	var f fileBuilder
	ways := append(f.add(f32Of(gate)), f.add(f32Of(up))...)
	whole := f.add(f32Of(interleaveRows(gate, up, cols)))
	values := f.add(f32Of(interleaveRows(gate, up, 1)))
	path := filepath.Join(b.TempDir(), "data")
	if err := os.WriteFile(path, f.b, 0o644); err != nil {
		b.Fatal(err)
	}
	file, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer file.Close()
	logical, flat := []uint64{experts, cols, 2 * rows}, []uint64{2 * uint64(n)}
	for _, bb := range []struct {
		name     string
		pub, exp Operand
	}{
		{"rows-transposed", Operand{DType: safetensors.F32, Shape: logical, Segments: whole, Transposed: true},
			Operand{DType: safetensors.F32, Shape: logical, Segments: ways, Transposed: true, Interleave: []uint64{cols * 4, cols * 4}}},
		{"whole-transposed", Operand{DType: safetensors.F32, Shape: logical, Segments: whole, Transposed: true},
			Operand{DType: safetensors.F32, Shape: logical, Segments: whole, Transposed: true}},
		{"values", Operand{DType: safetensors.F32, Shape: flat, Segments: values},
			Operand{DType: safetensors.F32, Shape: flat, Segments: ways, Interleave: []uint64{4, 4}}},
		{"whole-values", Operand{DType: safetensors.F32, Shape: flat, Segments: values},
			Operand{DType: safetensors.F32, Shape: flat, Segments: values}},
	} {
		b.Run(bb.name, func(b *testing.B) {
			p := &Pair{Published: bb.pub, Exported: bb.exp}
			b.SetBytes(int64(bb.pub.Size() + bb.exp.Size()))
			for b.Loop() {
				if _, err := Run(context.Background(), []io.ReaderAt{file}, []*Pair{p}, Options{Workers: 2}); err != nil {
					b.Fatal(err)
				}
				if !p.Stats.BitIdentical {
					b.Fatalf("%+v", p.Stats)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(2*n), "ns/elem")
		})
	}
}
