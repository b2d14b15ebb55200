package values

import (
	"math"
	"unsafe"

	"github.com/ckptcheck/ckptcheck/safetensors"
)

// The codec loop in Go, for the builds without codec_fused_amd64.s: the
// same one pass's numbers, added in the same order (element i in lane
// i mod 4, in element order, as the kernels' Go loops add them): the
// statistics of every element, Σs², the elements outside their half step
// (unmasked: fusedSteps.redo counts a chunk with a NaN or an infinity
// again), and the largest ratio of each lane.
//
// Go keeps few floats in registers (codec_fused_gen_*.go, written by
// ./internal/kernelgen for each published dtype): the lane loop adds Σ|d|,
// Σd², Σp², Σe², Σp·e, Σs², the count outside the tolerance and the
// largest |d| (as bits: non-negative floats order as their bits do; a chunk
// with a NaN, whose bits would win, is measured again by the kernel, its
// counts too). With a relative tolerance, whose |p| and product take two
// more floats, Σp² and Σe² are left to the squares loop, four lanes an
// iteration, and the lane loop adds the rest. Like the assembly's gated
// loop it looks closer only at an element not below gate·s (gate the least
// of (1+StepMargin)/2 and the lane's trigger, which only grows, so every
// element outside or that may beat the largest ratio is looked at, and so
// is one with a NaN, a negative or an infinite step), and divides only
// where an element may beat the ratio.

// A goLoop is one of the generated Go loops over n elements.
type goLoop func(p, e, s unsafe.Pointer, n int, st *laneState, sl *stepLanes)

// goCodecLoop returns the Go codec loop for a published dtype (BF16, F16
// or F32) against decoded F32, or nil.
func goCodecLoop(p, e safetensors.DType) codecLoop {
	if e != safetensors.F32 {
		return nil
	}
	var squares, withRtol, atolOnly goLoop
	switch p {
	case safetensors.BF16:
		squares, withRtol, atolOnly = squaresBF16, codecLanesBF16, codecLanesBF16Atol
	case safetensors.F16:
		squares, withRtol, atolOnly = squaresF16, codecLanesF16, codecLanesF16Atol
	case safetensors.F32:
		squares, withRtol, atolOnly = squaresF32, codecLanesF32, codecLanesF32Atol
	default:
		return nil
	}
	return func(pb, eb, sb *byte, n int, st *laneState, sl *stepLanes) {
		n &^= lanes - 1 // as the contract says; the lane loops would take a lane's extra element
		pp, ep, sp := unsafe.Pointer(pb), unsafe.Pointer(eb), unsafe.Pointer(sb)
		if st.rtol == [lanes]float64{} {
			atolOnly(pp, ep, sp, n, st, sl)
		} else {
			squares(pp, ep, sp, n, st, sl)
			withRtol(pp, ep, sp, n, st, sl)
		}
	}
}

// lookCloser measures an element of lane l whose |d| is not below gate·s:
// it counts it outside its half step, makes its ratio the lane's largest
// if it is, and returns the lane's gate. Not inlined: inline, its
// constants cost the loops' every iteration a reload.
//
//go:noinline
func lookCloser(ad, s float64, sl *stepLanes, l int) float64 {
	const k2 = (1 + StepMargin) / 2
	if ad > k2*s {
		sl.out[l]++
	}
	if ad > sl.trig[l]*s && ad-ad == 0 {
		if r := ad / (s * 0.5); r > sl.rmax[l] { // a NaN (a NaN step) is no ratio
			sl.rmax[l] = r
			sl.trig[l] = r * maxSkip * 0.5
		}
	}
	return min(sl.trig[l], k2)
}

// atolOrder is a as an integer t such that, for every |d| other than a NaN,
// |d| > a exactly where int64(bits(|d|)) > t: non-negative floats order as
// their bits do.
func atolOrder(a float64) int64 {
	switch {
	case a >= 0:
		return int64(math.Float64bits(a) &^ (1 << 63)) // −0 as 0
	case a < 0:
		return -1 // every |d| is above
	}
	return math.MaxInt64 // a NaN: none is
}
