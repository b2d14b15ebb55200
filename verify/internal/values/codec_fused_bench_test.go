//go:build linux && amd64 && !purego

package values

import (
	"runtime"
	"testing"
	"unsafe"

	"github.com/ckptcheck/ckptcheck/safetensors"
)

// BenchmarkCodecLoop times the codec loop on a step chunk in the
// first-level cache (BF16 against F32 decoded values and their steps),
// beside the two loops it replaces: the loops alone, in ns an element.
func BenchmarkCodecLoop(b *testing.B) {
	if !cpuAVX2() || !cpuFMA() {
		b.Skip("no AVX2 and FMA")
	}
	const n = stepChunk
	pv, ev, steps := codecBenchChunk(n)
	pb, eb := encodeAs(safetensors.BF16, pv), encodeAs(safetensors.F32, ev)
	sp := (*byte)(unsafe.Pointer(&steps[0]))
	var v vectorSteps
	v.begin(stepsBF16F32LeanAVX2, safetensors.BF16, safetensors.F32, true)
	st := laneState{rtol: [lanes]float64{1e-1, 1e-1, 1e-1, 1e-1}}
	// The chunk's largest ratio is the largest so far, as it is soon in a
	// weight: the loops divide only where an element beats it.
	v.add(pb, eb, steps)
	run := func(b *testing.B, f func()) {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		cpu0 := threadCPU()
		for b.Loop() {
			v.startChunk()
			f()
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/elem")
		b.ReportMetric(float64(threadCPU()-cpu0)/float64(b.N)/n, "cpu-ns/elem")
	}
	b.Run("two-loops", func(b *testing.B) {
		run(b, func() {
			fusedBF16F32AVX2(&pb[0], &eb[0], n, &st)
			stepsBF16F32LeanAVX2(&pb[0], &eb[0], sp, n, &v.st)
		})
	})
	b.Run("codec", func(b *testing.B) {
		run(b, func() { codecBF16F32AVX2(&pb[0], &eb[0], sp, n, &st, &v.st) })
	})
	b.Run("codec-atol", func(b *testing.B) {
		run(b, func() { codecBF16F32AtolAVX2(&pb[0], &eb[0], sp, n, &st, &v.st) })
	})
	b.Run("codec-busy", func(b *testing.B) {
		run(b, func() { codecBF16F32BusyAVX2(&pb[0], &eb[0], sp, n, &st, &v.st) })
	})
	b.Run("codec-atol-busy", func(b *testing.B) {
		run(b, func() { codecBF16F32AtolBusyAVX2(&pb[0], &eb[0], sp, n, &st, &v.st) })
	})
}
