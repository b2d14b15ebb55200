//go:build amd64 && !purego

package values

import "github.com/ckptcheck/ckptcheck/safetensors"

// codecStepLoop returns the AVX2 codec loop for a pair of kernel dtypes
// and a tolerance, or nil: BF16 published against decoded F32 only.
func codecStepLoop(p, e safetensors.DType, tol Tolerance) codecLoop {
	if leanStepLoop(p, e) == nil || !cpuFMA() {
		return nil
	}
	if tol.Rtol == 0 { // the tolerance is Atol, for a finite p
		return codecBF16F32AtolAVX2
	}
	return codecBF16F32AVX2
}

//go:noescape
func codecBF16F32AVX2(p, e, s *byte, n int, st *laneState, sl *stepLanes)

//go:noescape
func codecBF16F32AtolAVX2(p, e, s *byte, n int, st *laneState, sl *stepLanes)
