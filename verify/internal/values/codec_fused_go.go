package values

import (
	"math"
	"unsafe"

	"github.com/ckptcheck/ckptcheck/safetensors"
)

// The codec loop in Go, for the builds without codec_fused_amd64.s: the
// same one pass, lane by lane (element i in lane i mod 4, in element
// order, as the kernels' Go loops add them), each lane's sums in
// registers. It adds what the assembly adds, in the same order: the
// statistics of every element, Σs², the elements outside their half step
// (unmasked: fusedSteps.redo counts a chunk with a NaN or an infinity
// again), and the largest ratio of each lane, dividing only where an
// element may beat it. It needs no gate, so it never asks for the busy
// loop (again stays 0).

// goCodecLoop returns the Go codec loop for a published dtype (BF16, F16
// or F32) against decoded F32, or nil.
func goCodecLoop(p, e safetensors.DType) codecLoop {
	if e != safetensors.F32 {
		return nil
	}
	switch p {
	case safetensors.BF16, safetensors.F16, safetensors.F32:
	default:
		return nil
	}
	psz := p.Bits() / 8
	return func(pb, eb, sb *byte, n int, st *laneState, sl *stepLanes) {
		n &^= lanes - 1
		var buf [stepChunk]float32
		for off := 0; off < n; off += stepChunk {
			m := min(stepChunk, n-off)
			pv := buf[:m]
			decodeFloat32(p, unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(pb), off*psz)), m*psz), pv)
			ev := unsafe.Slice((*float32)(unsafe.Add(unsafe.Pointer(eb), 4*off)), m)
			sv := unsafe.Slice((*float32)(unsafe.Add(unsafe.Pointer(sb), 4*off)), m)
			codecLanes(pv, ev, sv, st, sl)
		}
	}
}

// codecLanes measures len(pv) elements (a multiple of 4): statistics into
// st, steps into sl.
func codecLanes(pv, ev, sv []float32, st *laneState, sl *stepLanes) {
	ev, sv = ev[:len(pv)], sv[:len(pv)]
	const k2 = (1 + StepMargin) / 2
	for l := range min(lanes, len(pv)) {
		sAbs, sD2, sP2, sE2, sPE := st.sum[0][l], st.sum[1][l], st.sum[2][l], st.sum[3][l], st.sum[4][l]
		atol, rtol := st.atol[l], st.rtol[l]
		mx, tol := st.max[l], uint64(0)
		s2, rmax, trig, out := sl.s2[l], sl.rmax[l], sl.trig[l], uint64(0)
		for i := l; i < len(pv); i += lanes {
			p, e, s := float64(pv[i]), float64(ev[i]), float64(sv[i])
			d := e - p
			ad := math.Abs(d)
			// Products of widened float32 values are exact: fused or not,
			// the sums are the same. d·d is not: it is rounded first.
			sAbs += ad
			sD2 += float64(d * d)
			sP2 += p * p
			sE2 += e * e
			sPE += p * e
			if ad > atol+float64(rtol*math.Abs(p)) {
				tol++
			}
			if ad > mx {
				mx = ad
			}
			s2 += s * s
			if ad > float64(k2*s) {
				out++
			}
			if ad > float64(trig*s) && ad-ad == 0 {
				r := ad / float64(s*0.5)
				if r > rmax { // a NaN (a NaN step) is no ratio
					rmax = r
					trig = rmax * maxSkip * 0.5
				}
			}
		}
		st.sum[0][l], st.sum[1][l], st.sum[2][l], st.sum[3][l], st.sum[4][l] = sAbs, sD2, sP2, sE2, sPE
		st.max[l], st.out[l] = mx, st.out[l]+tol
		sl.s2[l], sl.rmax[l], sl.trig[l], sl.out[l] = s2, rmax, trig, sl.out[l]+out
	}
}
