//go:build amd64 && !purego

package values

import "github.com/ckptcheck/ckptcheck/safetensors"

// codecStepLoops returns the AVX2 codec loops for a pair of kernel dtypes
// and a tolerance, gated and busy (see codec_fused_amd64.s), or nils: BF16
// published against decoded F32 only.
func codecStepLoops(p, e safetensors.DType, tol Tolerance) (gated, busy codecLoop) {
	if leanStepLoop(p, e) == nil || !cpuFMA() {
		return nil, nil
	}
	if tol.Rtol == 0 { // the tolerance is Atol, for a finite p
		return codecBF16F32AtolAVX2, codecBF16F32AtolBusyAVX2
	}
	return codecBF16F32AVX2, codecBF16F32BusyAVX2
}

//go:noescape
func codecBF16F32AVX2(p, e, s *byte, n int, st *laneState, sl *stepLanes)

//go:noescape
func codecBF16F32AtolAVX2(p, e, s *byte, n int, st *laneState, sl *stepLanes)

//go:noescape
func codecBF16F32BusyAVX2(p, e, s *byte, n int, st *laneState, sl *stepLanes)

//go:noescape
func codecBF16F32AtolBusyAVX2(p, e, s *byte, n int, st *laneState, sl *stepLanes)
