//go:build amd64 && !purego

package values

import "github.com/ckptcheck/ckptcheck/safetensors"

// codecStepLoops returns the AVX2 codec loops for a pair of kernel dtypes
// and a tolerance, gated and busy (see codec_fused_amd64.s), or nils: BF16,
// F16 or F32 published against decoded F32, or decoded F32 published
// against BF16 or F16 (mirror: the loops take the exported side first).
func codecStepLoops(p, e safetensors.DType, tol Tolerance) (gated, busy codecLoop, mirror bool) {
	if !cpuAVX2() || !cpuFMA() || kernelChoice != kernelsAuto {
		return nil, nil, false
	}
	atol := tol.Rtol == 0 // the tolerance is Atol, for a finite p
	switch {
	case e != safetensors.F32 && p != safetensors.F32:
	case (p == safetensors.F16 || e == safetensors.F16) && !cpuF16C():
	case e == safetensors.F32 && p == safetensors.BF16 && atol:
		return codecBF16F32AtolAVX2, codecBF16F32AtolBusyAVX2, false
	case e == safetensors.F32 && p == safetensors.BF16:
		return codecBF16F32AVX2, codecBF16F32BusyAVX2, false
	case e == safetensors.F32 && p == safetensors.F16 && atol:
		return codecF16F32AtolAVX2, codecF16F32AtolBusyAVX2, false
	case e == safetensors.F32 && p == safetensors.F16:
		return codecF16F32AVX2, codecF16F32BusyAVX2, false
	case e == safetensors.F32 && p == safetensors.F32 && atol:
		return codecF32F32AtolAVX2, codecF32F32AtolBusyAVX2, false
	case e == safetensors.F32 && p == safetensors.F32:
		return codecF32F32AVX2, codecF32F32BusyAVX2, false
	case e == safetensors.BF16 && atol:
		return codecF32BF16AtolAVX2, codecF32BF16AtolBusyAVX2, true
	case e == safetensors.BF16:
		return codecF32BF16AVX2, codecF32BF16BusyAVX2, true
	case e == safetensors.F16 && atol:
		return codecF32F16AtolAVX2, codecF32F16AtolBusyAVX2, true
	case e == safetensors.F16:
		return codecF32F16AVX2, codecF32F16BusyAVX2, true
	}
	return nil, nil, false
}

//go:noescape
func codecBF16F32AVX2(p, e, s *byte, n int, st *laneState, sl *stepLanes)

//go:noescape
func codecBF16F32BusyAVX2(p, e, s *byte, n int, st *laneState, sl *stepLanes)

//go:noescape
func codecBF16F32AtolAVX2(p, e, s *byte, n int, st *laneState, sl *stepLanes)

//go:noescape
func codecBF16F32AtolBusyAVX2(p, e, s *byte, n int, st *laneState, sl *stepLanes)

//go:noescape
func codecF16F32AVX2(p, e, s *byte, n int, st *laneState, sl *stepLanes)

//go:noescape
func codecF16F32BusyAVX2(p, e, s *byte, n int, st *laneState, sl *stepLanes)

//go:noescape
func codecF16F32AtolAVX2(p, e, s *byte, n int, st *laneState, sl *stepLanes)

//go:noescape
func codecF16F32AtolBusyAVX2(p, e, s *byte, n int, st *laneState, sl *stepLanes)

//go:noescape
func codecF32F32AVX2(p, e, s *byte, n int, st *laneState, sl *stepLanes)

//go:noescape
func codecF32F32BusyAVX2(p, e, s *byte, n int, st *laneState, sl *stepLanes)

//go:noescape
func codecF32F32AtolAVX2(p, e, s *byte, n int, st *laneState, sl *stepLanes)

//go:noescape
func codecF32F32AtolBusyAVX2(p, e, s *byte, n int, st *laneState, sl *stepLanes)

//go:noescape
func codecF32BF16AVX2(p, e, s *byte, n int, st *laneState, sl *stepLanes)

//go:noescape
func codecF32BF16BusyAVX2(p, e, s *byte, n int, st *laneState, sl *stepLanes)

//go:noescape
func codecF32BF16AtolAVX2(p, e, s *byte, n int, st *laneState, sl *stepLanes)

//go:noescape
func codecF32BF16AtolBusyAVX2(p, e, s *byte, n int, st *laneState, sl *stepLanes)

//go:noescape
func codecF32F16AVX2(p, e, s *byte, n int, st *laneState, sl *stepLanes)

//go:noescape
func codecF32F16BusyAVX2(p, e, s *byte, n int, st *laneState, sl *stepLanes)

//go:noescape
func codecF32F16AtolAVX2(p, e, s *byte, n int, st *laneState, sl *stepLanes)

//go:noescape
func codecF32F16AtolBusyAVX2(p, e, s *byte, n int, st *laneState, sl *stepLanes)
