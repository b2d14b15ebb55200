//go:build linux

package verify

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/quant"
	"github.com/ckptcheck/ckptcheck/safetensors"
	"github.com/ckptcheck/ckptcheck/verify/internal/values"
)

// The fine-tune benchmarks: every element of the export moved 1 to 4 ulps
// (fixture.MoveULPs), so every value is decoded and judged against the
// tolerance, as after a real fine-tune. Each dtype pair is timed with the
// default kernels, with the portable kernels only, and as `cat` of the same
// two files: the speed of reading them, the floor (same b.SetBytes, so the
// MB/s compare directly).

// benchModel is a Qwen3 of 77M parameters (154 MB in BF16): large enough to
// stream through many blocks, small enough to write quickly.
var benchModel = fixture.Qwen3{Vocab: 32768, Hidden: 1024, Layers: 3, Heads: 16, KVHeads: 8, HeadDim: 128,
	Intermediate: 3072, Tied: true, Seed: 6}

type finetunePair struct {
	name     string
	pub, exp string // files
	bytes    int64
}

var (
	finetuneOnce  sync.Once
	finetuneDir   string
	finetunePairs []finetunePair
	finetuneErr   error
)

// finetuneFixtures writes the published model in BF16 and F16 and the
// fine-tuned exports: BF16, its exact F32 upcast, F16, and F16's F32 upcast.
func finetuneFixtures(b *testing.B) []finetunePair {
	finetuneOnce.Do(func() {
		finetuneDir, finetuneErr = os.MkdirTemp("", "ckptcheck-bench-finetune-")
		if finetuneErr != nil {
			return
		}
		moved := func(t fixture.Tensor) fixture.Tensor { return fixture.MoveULPs(t, 12) }
		movedF16 := func(t fixture.Tensor) fixture.Tensor { return moved(fixture.ToF16(t)) }
		files := []struct {
			name  string
			dtype safetensors.DType
			f     func(fixture.Tensor) fixture.Tensor
		}{
			{"pub", safetensors.BF16, nil},
			{"moved", safetensors.BF16, moved},
			{"moved-f32", safetensors.F32, func(t fixture.Tensor) fixture.Tensor { return fixture.Upcast(moved(t)) }},
			{"pub-f16", safetensors.F16, fixture.ToF16},
			{"moved-f16", safetensors.F16, movedF16},
			{"moved-f16-f32", safetensors.F32, func(t fixture.Tensor) fixture.Tensor { return upcastF16(movedF16(t)) }},
		}
		path := func(n string) string { return filepath.Join(finetuneDir, n+".safetensors") }
		for _, f := range files {
			if finetuneErr = fixture.WriteStream(path(f.name), benchModel, f.dtype, f.f); finetuneErr != nil {
				return
			}
		}
		for _, p := range [][3]string{{"bf16-bf16", "pub", "moved"}, {"bf16-f32", "pub", "moved-f32"},
			{"f16-f16", "pub-f16", "moved-f16"}, {"f16-f32", "pub-f16", "moved-f16-f32"}} {
			var n int64
			for _, f := range p[1:] {
				st, err := os.Stat(path(f))
				if err != nil {
					finetuneErr = err
					return
				}
				n += st.Size()
			}
			finetunePairs = append(finetunePairs, finetunePair{p[0], path(p[1]), path(p[2]), n})
		}
	})
	if finetuneErr != nil {
		b.Fatal(finetuneErr)
	}
	return finetunePairs
}

// upcastF16 converts an F16 tensor to F32 exactly.
func upcastF16(t fixture.Tensor) fixture.Tensor {
	vals := make([]float32, len(t.Data)/2)
	for i := range vals {
		vals[i] = quant.F16ToFloat32(uint16(t.Data[2*i]) | uint16(t.Data[2*i+1])<<8)
	}
	return fixture.Tensor{Name: t.Name, DType: safetensors.F32, Shape: t.Shape, Data: fixture.Encode(vals, safetensors.F32)}
}

// BenchmarkValuesFineTune compares published and fine-tuned exports with
// --rtol 1e-1 (default kernels, portable kernels), and times `cat` of both.
func BenchmarkValuesFineTune(b *testing.B) {
	pairs := finetuneFixtures(b)
	opt := ValueOptions{Policy: ValuePolicy{Default: Tolerance{Rtol: 1e-1}}}
	for _, p := range pairs {
		d := diffPaths(b, p.pub, p.exp, DiffOptions{})
		for _, k := range kernelSets() {
			b.Run(p.name+"/"+k.name, func(b *testing.B) {
				defer k.use()()
				b.SetBytes(p.bytes)
				cpu0 := cpuTime(syscall.RUSAGE_SELF)
				for b.Loop() {
					rep, err := d.CompareValues(context.Background(), opt)
					if err != nil {
						b.Fatal(err)
					}
					if rep.Compared == 0 {
						b.Fatal("nothing compared")
					}
				}
				b.ReportMetric(float64(cpuTime(syscall.RUSAGE_SELF)-cpu0)/1e6/float64(b.N), "cpu-ms/op")
			})
		}
		b.Run(p.name+"/cat", func(b *testing.B) {
			devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
			if err != nil {
				b.Fatal(err)
			}
			defer devNull.Close()
			b.SetBytes(p.bytes)
			cpu0 := cpuTime(syscall.RUSAGE_CHILDREN)
			for b.Loop() {
				cmd := exec.Command("cat", p.pub, p.exp)
				cmd.Stdout = devNull
				if err := cmd.Run(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cpuTime(syscall.RUSAGE_CHILDREN)-cpu0)/1e6/float64(b.N), "cpu-ms/op")
		})
	}
}

type kernelSet struct {
	name string
	use  func() (restore func())
}

// kernelSets are the loops benchmarked: the default (the vector loops
// where the CPU has them) and the portable Go loops.
func kernelSets() []kernelSet {
	set := func(portable bool) func() func() {
		return func() func() { return values.UseKernels(portable) }
	}
	return []kernelSet{{"default", set(false)}, {"portable", set(true)}}
}

// cpuTime is the user and system CPU time in ns of this process or its
// waited-for children.
func cpuTime(who int) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
