//go:build linux

package values

import (
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
	"unsafe"

	"github.com/ckptcheck/ckptcheck/safetensors"
)

// BenchmarkGoCodecLoop times the Go codec loop (the one builds without the
// assembly take) on a step chunk in the first-level cache, for each
// published dtype against F32 decoded values and their steps, in ns an
// element.
func BenchmarkGoCodecLoop(b *testing.B) {
	const n = stepChunk
	pv, ev, steps := codecBenchChunk(n)
	eb := encodeAs(safetensors.F32, ev)
	sp := (*byte)(unsafe.Pointer(&steps[0]))
	for _, c := range []struct {
		name string
		pd   safetensors.DType
		tol  Tolerance
	}{{"bf16", safetensors.BF16, Tolerance{}}, {"bf16-rtol", safetensors.BF16, Tolerance{Rtol: 1e-1}},
		{"f16", safetensors.F16, Tolerance{}}, {"f32", safetensors.F32, Tolerance{}}} {
		b.Run(c.name, func(b *testing.B) {
			pb := encodeAs(c.pd, pv)
			loop := goCodecLoop(c.pd, safetensors.F32)
			var v vectorSteps
			v.begin(nil, c.pd, safetensors.F32, true)
			var k kernel
			k.begin(c.pd, safetensors.F32, 0, n, c.tol)
			// The chunk's largest ratio is the largest so far, as it is
			// soon in a weight: the loop divides only where an element
			// beats it.
			v.startChunk()
			loop(&pb[0], &eb[0], sp, n, &k.st, &v.st)
			v.best = max(max(v.st.rmax[0], v.st.rmax[1]), max(v.st.rmax[2], v.st.rmax[3]))
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			cpu0 := threadCPU()
			for b.Loop() {
				v.startChunk()
				loop(&pb[0], &eb[0], sp, n, &k.st, &v.st)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/elem")
			b.ReportMetric(float64(threadCPU()-cpu0)/float64(b.N)/n, "cpu-ns/elem")
		})
	}
}

// codecBenchChunk returns n elements as in a quantized export: values
// within half a step of the published ones, some (as many as of Q4_K's)
// beyond.
func codecBenchChunk(n int) (pv, ev, steps []float32) {
	pv, ev, steps = make([]float32, n), make([]float32, n), make([]float32, n)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range pv {
		pv[i] = math.Float32frombits(math.Float32bits(float32(rng.NormFloat64())) &^ 0xFFFF)
		steps[i] = 1.0 / 64
		ev[i] = pv[i] + steps[i]*float32(rng.Float64()-0.5)
		if rng.IntN(700) == 0 {
			ev[i] = pv[i] + steps[i]*0.75
		}
	}
	return pv, ev, steps
}

// BenchmarkGoPlainLoop times the plain kernel's Go loop (BF16 against
// BF16) on the same chunk, the yardstick of the one above.
func BenchmarkGoPlainLoop(b *testing.B) {
	const n = stepChunk
	pv, ev := make([]float32, n), make([]float32, n)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range pv {
		pv[i] = float32(rng.NormFloat64())
		ev[i] = pv[i] * (1 + float32(rng.Float64()-0.5)/64)
	}
	pb, eb := encodeAs(safetensors.BF16, pv), encodeAs(safetensors.BF16, ev)
	st := laneState{rtol: [lanes]float64{1e-1, 1e-1, 1e-1, 1e-1}}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpu0 := threadCPU()
	for b.Loop() {
		fusedBF16BF16(&pb[0], &eb[0], n, &st)
	}
	b.ReportMetric(float64(threadCPU()-cpu0)/float64(b.N)/n, "cpu-ns/elem")
}
