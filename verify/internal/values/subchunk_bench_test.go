//go:build linux

package values

import (
	"bytes"
	"context"
	"io"
	"math"
	"math/rand/v2"
	"syscall"
	"testing"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/internal/ggufwrite"
	"github.com/ckptcheck/ckptcheck/internal/quantfixture"
	"github.com/ckptcheck/ckptcheck/quant"
	"github.com/ckptcheck/ckptcheck/safetensors"
	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// BenchmarkRunQuantized times a whole Run, one worker, bytes in memory, of
// a BF16 weight against its quantized export (FP8 block-128, GPTQ int4
// g128, GGUF Q8_0 and Q4_K: issues 20 and 25) with the sub-chunked path
// (in one pass, and in two: no codec loop) and without, beside the BF16
// fine-tune of it (every value moved an ulp): the time to hold them to;
// and an F16 published side against Q8_0.
// ns/elem is a logical element.
func BenchmarkRunQuantized(b *testing.B) {
	shape := []uint64{3072, 1024}
	rng := rand.New(rand.NewPCG(3, 4))
	vals := make([]float32, shape[0]*shape[1])
	for i := range vals {
		vals[i] = float32(rng.NormFloat64() / 32)
	}
	src := fixture.Tensor{Name: "w.weight", DType: safetensors.BF16, Shape: shape, Data: encodeAs(safetensors.BF16, vals)}
	var f fileBuilder
	pub := Operand{DType: safetensors.BF16, Shape: shape, Segments: f.add(src.Data)}
	moved := fixture.MoveULPs(src, 5)
	type export struct {
		name string
		op   Operand
		pub  *Operand // nil: the BF16 one
	}
	exports := []export{{"bf16", Operand{DType: safetensors.BF16, Shape: shape, Segments: f.add(moved.Data)}, nil}}
	codec := func(name string, c quant.Codec, parts ...[]byte) {
		o := Operand{Shape: shape, Codec: c}
		for _, p := range parts {
			o.Parts = append(o.Parts, f.add(p))
		}
		exports = append(exports, export{name, o, nil})
	}
	fp8, _ := quant.NewBlockFP8(128, 128)
	fq := quantfixture.BlockFP8{Rows: 128, Cols: 128}.Quantize(src)
	codec("fp8block", fp8, fq[0].Data, fq[1].Data)
	gptq, _ := quant.NewGPTQ(quant.GPTQConfig{Bits: 4, GroupSize: 128, Scale: tensorfile.F16, ZeroOffset: 1, GIdx: true})
	gq := quantfixture.GPTQ{Bits: 4, Group: 128}.Quantize(src)
	codec("gptq", gptq, gq[0].Data, gq[2].Data, gq[1].Data, gq[3].Data)
	q8, _ := quant.GGML(tensorfile.Q8_0)
	codec("q8_0", q8, ggufwrite.AppendQ8_0(nil, vals))
	// An F16 model's GGUF export.
	vals64 := make([]float64, len(vals))
	for i, v := range vals {
		vals64[i] = float64(v)
	}
	pub16 := Operand{DType: safetensors.F16, Shape: shape, Segments: f.add(encode(safetensors.F16, vals64))}
	exports = append(exports, export{"f16-q8_0", exports[len(exports)-1].op, &pub16})
	q4k, _ := quant.GGML(tensorfile.Q4_K)
	codec("q4_k", q4k, ggufwrite.AppendQ4K(nil, vals))
	readers := []io.ReaderAt{bytes.NewReader(f.b)}
	n := float64(len(vals))
	for _, e := range exports {
		for _, mode := range []string{"", "-twopass", "-whole"} {
			if e.op.Codec == nil && mode != "" {
				continue
			}
			b.Run(e.name+mode, func(b *testing.B) {
				defer func(sub, codec bool) { subChunking, codecLoops = sub, codec }(subChunking, codecLoops)
				subChunking, codecLoops = mode != "-whole", mode == ""
				pp := pub
				if e.pub != nil {
					pp = *e.pub
				}
				p := &Pair{Published: pp, Exported: e.op, Tolerance: Tolerance{Rtol: 1e-1}}
				if _, err := Run(context.Background(), readers, []*Pair{p}, Options{Workers: 1}); err != nil {
					b.Fatal(err)
				}
				if e.op.Codec != nil && (p.Stats.Steps == nil || math.IsNaN(p.Stats.Steps.NoiseRelL2)) {
					b.Fatalf("no steps: %+v", p.Stats)
				}
				cpu0 := processCPU()
				for b.Loop() {
					if _, err := Run(context.Background(), readers, []*Pair{p}, Options{Workers: 1}); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/elem")
				b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N)/n, "cpu-ns/elem")
			})
		}
	}
}

// processCPU is the process's user and system CPU time in ns: a Run's
// work is on goroutines of its own.
func processCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
