//go:build !purego

package values

import "github.com/ckptcheck/ckptcheck/internal/cpufeature"

// The AVX2 loops (kernels_amd64.s) run where the CPU has AVX2 and the
// operating system saves the 256-bit registers; the F16 ones also need F16C.
// Building with -tags purego leaves them out. internal/cpufeature asks the
// CPU on first use, not at package init.

// cpuAVX2 reports AVX2 with the YMM state enabled; cpuF16C and cpuFMA,
// F16C and FMA too.
func cpuAVX2() bool { return cpufeature.X86().AVX2 }
func cpuF16C() bool { return cpufeature.X86().F16C }
func cpuFMA() bool  { return cpufeature.X86().FMA }

// vectorValuesKernel returns the AVX2 loop over decoded values, or nil.
func vectorValuesKernel() func(p, e *byte, n int, st *laneState) {
	if !cpuAVX2() {
		return nil
	}
	return fusedValuesAVX2
}
