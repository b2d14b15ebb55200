//go:build linux

package values

import (
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/ckptcheck/ckptcheck/safetensors"
)

// BenchmarkMeasureSteps times the step loops on a BF16 published side
// against F32 decoded values: the portable loop (values decoded to float32
// first) and the vector loop over the bytes.
func BenchmarkMeasureSteps(b *testing.B) {
	const n = 1 << 16
	pv, ev, steps := make([]float32, n), make([]float32, n), make([]float32, n)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range pv {
		pv[i] = float32(rng.NormFloat64())
		steps[i] = 1.0 / 64
		ev[i] = pv[i] + steps[i]*float32(rng.Float64()-0.5)
	}
	pb, eb := encodeAs(safetensors.BF16, pv), encodeAs(safetensors.F32, ev)
	run := func(b *testing.B, f func()) {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		cpu0 := threadCPU()
		for b.Loop() {
			f()
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/elem")
		b.ReportMetric(float64(threadCPU()-cpu0)/float64(b.N)/n, "cpu-ns/elem")
	}
	b.Run("portable", func(b *testing.B) {
		run(b, func() {
			var sp stepPartial
			decodeFloat32(safetensors.BF16, pb, pv)
			measureOneSide(&sp, pv, ev, steps, 0)
		})
	})
	if loop := vectorStepLoop(safetensors.BF16, safetensors.F32); loop != nil {
		b.Run("vector", func(b *testing.B) {
			run(b, func() {
				var sp stepPartial
				measureVector(&sp, loop, safetensors.BF16, pb, safetensors.F32, eb, steps, 0)
			})
		})
	}
}
