//go:build amd64 && !purego

package values

import "github.com/ckptcheck/ckptcheck/safetensors"

// vectorStepLoop returns the AVX2 step loop for a pair of kernel dtypes,
// or nil.
func vectorStepLoop(p, e safetensors.DType) stepLoop {
	if !cpuAVX2() || kernelChoice != kernelsAuto {
		return nil
	}
	switch {
	case p == safetensors.F32 && e == safetensors.F32:
		return stepsF32F32AVX2
	case p == safetensors.BF16 && e == safetensors.F32:
		return stepsBF16F32AVX2
	case p == safetensors.F32 && e == safetensors.BF16:
		return stepsF32BF16AVX2
	}
	return nil
}

// leanStepLoop returns the AVX2 step loop that leaves Σp² (and the finite
// count) to the comparison's kernel, or nil.
func leanStepLoop(p, e safetensors.DType) stepLoop {
	if vectorStepLoop(p, e) == nil || p != safetensors.BF16 || e != safetensors.F32 {
		return nil
	}
	return stepsBF16F32LeanAVX2
}

func stepsBF16F32LeanAVX2(p, e, s *byte, n int, st *stepLanes)
func stepsF32F32AVX2(p, e, s *byte, n int, st *stepLanes)
func stepsBF16F32AVX2(p, e, s *byte, n int, st *stepLanes)
func stepsF32BF16AVX2(p, e, s *byte, n int, st *stepLanes)
