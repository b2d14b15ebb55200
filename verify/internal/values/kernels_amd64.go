//go:build !purego

package values

import "sync"

// The AVX2 loops (kernels_amd64.s) run where the CPU has AVX2 and the
// operating system saves the 256-bit registers; the F16 ones also need F16C.
// Building with -tags purego leaves them out.
//
// The CPU is asked on first use, not at package init: each CPUID is a VM
// exit, and `ckptcheck --version` compares no values.
var cpuFeaturesOnce = sync.OnceValue(cpuFeatures)

// cpuAVX2 reports AVX2 with the YMM state enabled; cpuF16C and cpuFMA,
// F16C and FMA too.
func cpuAVX2() bool { return cpuFeaturesOnce().avx2 }
func cpuF16C() bool { return cpuFeaturesOnce().f16c }
func cpuFMA() bool  { return cpuFeaturesOnce().fma }

type cpuSet struct{ avx2, f16c, fma bool }

func cpuFeatures() cpuSet {
	maxLeaf, _, _, _ := cpuid(0, 0)
	if maxLeaf < 7 {
		return cpuSet{}
	}
	_, _, c1, _ := cpuid(1, 0)
	const fmaBit, osxsave, avx, f16cBit = 1 << 12, 1 << 27, 1 << 28, 1 << 29
	if c1&osxsave == 0 || c1&avx == 0 || xgetbv()&6 != 6 { // XMM and YMM state enabled
		return cpuSet{}
	}
	_, b7, _, _ := cpuid(7, 0)
	avx2 := b7&(1<<5) != 0
	return cpuSet{avx2: avx2, f16c: avx2 && c1&f16cBit != 0, fma: avx2 && c1&fmaBit != 0}
}

func cpuid(leaf, sub uint32) (a, b, c, d uint32)

func xgetbv() (lo uint32)

// vectorValuesKernel returns the AVX2 loop over decoded values, or nil.
func vectorValuesKernel() func(p, e *byte, n int, st *laneState) {
	if !cpuAVX2() {
		return nil
	}
	return fusedValuesAVX2
}
