//go:build !purego

package values

import (
	"github.com/ckptcheck/ckptcheck/quant"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// dot2 is Σ a·x and Σ h·ax over len(a) elements; the AVX2 loop takes the
// multiples of 16, dot2Go the rest.
func dot2(a, x, h, ax []float64) (s, f float64) {
	n := len(a)
	x, h, ax = x[:n], h[:n], ax[:n]
	v := n &^ 15
	if !cpuAVX2() || v == 0 {
		return dot2Go(a, x, h, ax)
	}
	var out [2]float64
	dot2AVX2(&a[0], &x[0], &h[0], &ax[0], v, &out)
	ts, tf := dot2Go(a[v:], x[v:], h[v:], ax[v:])
	return out[0] + ts, out[1] + tf
}

// dot2AVX2 sums n (a multiple of 16, not 0) products of each pair into out.
//
//go:noescape
func dot2AVX2(a, x, h, ax *float64, n int, out *[2]float64)

// deltaRowFast is deltaRow with the AVX2 loop over the multiples of 4.
func deltaRowFast(merged, base, half []float64, h halfULPBits, table *[2048]float64, useBits bool) (differs, nonfinite uint64) {
	n := len(merged)
	base, half = base[:n], half[:n]
	v := n &^ 3
	if !cpuAVX2() || !useBits || v == 0 {
		return deltaRow(merged, base, half, h, table, useBits)
	}
	var counts [8]uint64
	deltaAVX2(&merged[0], &base[0], &half[0], v, h.minField, h.precision, &counts)
	differs, nonfinite = deltaRow(merged[v:], base[v:], half[v:], h, table, useBits)
	for i := range 4 {
		differs, nonfinite = differs+counts[i], nonfinite+counts[4+i]
	}
	return differs, nonfinite
}

// deltaAVX2 is deltaRow's loop over n elements, a multiple of 4, not 0.
//
//go:noescape
func deltaAVX2(merged, base, half *float64, n int, minField, precision uint64, counts *[8]uint64)

// deltaBF16 is DecodeFloat64 of both rows then deltaRow, for BF16 merged
// and base, in one AVX2 pass over the bytes; ok is false where it does
// not apply (then nothing is written).
func deltaBF16(mb, bb []byte, delta, half []float64, h halfULPBits, table *[2048]float64) (differs, nonfinite uint64, ok bool) {
	n := len(delta)
	v := n &^ 3
	if !cpuAVX2() || v == 0 || len(mb) < 2*n || len(bb) < 2*n {
		return 0, 0, false
	}
	half = half[:n]
	var counts [8]uint64
	deltaBF16AVX2(&mb[0], &bb[0], &delta[0], &half[0], v, h.minField, h.precision, &counts)
	if v < n {
		var merged [3]float64
		quant.DecodeFloat64(safetensors.BF16, bb[2*v:2*n], delta[v:])
		quant.DecodeFloat64(safetensors.BF16, mb[2*v:2*n], merged[:n-v])
		differs, nonfinite = deltaRow(merged[:n-v], delta[v:], half[v:], h, table, true)
	}
	for i := range 4 {
		differs, nonfinite = differs+counts[i], nonfinite+counts[4+i]
	}
	return differs, nonfinite, true
}

// deltaBF16AVX2 is deltaBF16's loop over n elements, a multiple of 4, not 0.
//
//go:noescape
func deltaBF16AVX2(merged, base *byte, delta, half *float64, n int, minField, precision uint64, counts *[8]uint64)

// dot2s fills diff[t], floor[t] with dot2(a, probes[t], h, absProbes[t])
// for every probe, three at a time in one AVX2 pass over a and h.
func dot2s(a, h []float64, probes, absProbes [][]float64, diff, floor []float64) {
	n := len(a)
	v := n &^ 7
	t := 0
	if cpuAVX2() && v > 0 {
		var out [6]float64
		for ; t+3 <= len(probes); t += 3 {
			x, ax := probes[t:t+3], absProbes[t:t+3]
			for i := range 3 {
				_, _ = x[i][n-1], ax[i][n-1] // the loop reads n of each
			}
			dot6AVX2(&a[0], &h[0], &x[0][0], &x[1][0], &x[2][0], &ax[0][0], &ax[1][0], &ax[2][0], v, &out)
			for i := range 3 {
				ts, tf := dot2Go(a[v:], x[i][v:], h[v:], ax[i][v:])
				diff[t+i], floor[t+i] = out[i]+ts, out[3+i]+tf
			}
		}
	}
	for ; t < len(probes); t++ {
		diff[t], floor[t] = dot2(a, probes[t], h, absProbes[t])
	}
}

// dot6AVX2 is three dot2AVX2 over n elements, a multiple of 8, not 0:
// out holds the three Σ a·x, then the three Σ h·ax.
//
//go:noescape
func dot6AVX2(a, h, x0, x1, x2, ax0, ax1, ax2 *float64, n int, out *[6]float64)

// projectBF16x3 is one row of a BF16 pair projected on three probes in a
// single AVX2 pass over its bytes (deltaBF16 and dot2s fused); ok is false
// where it does not apply (then nothing is written). tail is scratch for
// the last cols mod 4 elements.
func projectBF16x3(mb, bb []byte, probes, absProbes, scaledAbs [][]float64, h halfULPBits, table *[2048]float64,
	diff, floor []float64, tail *projectScratch) (differs, nonfinite uint64, ok bool) {
	n := len(probes[0])
	v := n &^ 3
	if !cpuAVX2() || v == 0 || len(mb) < 2*n || len(bb) < 2*n {
		return 0, 0, false
	}
	x, ax := probes[:3], absProbes[:3]
	for i := range 3 {
		_, _ = x[i][n-1], ax[i][n-1] // the loop reads n of each
	}
	var out [6]float64
	fused := false
	if v8 := n &^ 7; useFMA() && v8 > 0 && len(scaledAbs) >= 3 {
		sx := scaledAbs[:3]
		for i := range 3 {
			_ = sx[i][n-1]
		}
		var counts [4]uint64
		projBF16x3FMA(&mb[0], &bb[0], &x[0][0], &x[1][0], &x[2][0], &sx[0][0], &sx[1][0], &sx[2][0], v8, &out, &counts)
		// A NaN or Inf makes an output non-finite: then the exact loop
		// below counts and excludes them.
		if fused = allFinite(out[:]); fused {
			v, differs = v8, counts[0]+counts[1]+counts[2]+counts[3]
		}
	}
	if !fused {
		var counts [8]uint64
		projBF16x3AVX2(&mb[0], &bb[0], &x[0][0], &x[1][0], &x[2][0], &ax[0][0], &ax[1][0], &ax[2][0], v, h.minField, h.precision, &out, &counts)
		for i := range 4 {
			differs, nonfinite = differs+counts[i], nonfinite+counts[4+i]
		}
	}
	for i := range 3 {
		diff[i], floor[i] = out[i], out[3+i]
	}
	if v < n {
		tail.base, tail.merged, tail.half = growFloats(tail.base, n-v), growFloats(tail.merged, n-v), growFloats(tail.half, n-v)
		quant.DecodeFloat64(safetensors.BF16, bb[2*v:2*n], tail.base)
		quant.DecodeFloat64(safetensors.BF16, mb[2*v:2*n], tail.merged)
		d, nf := deltaRow(tail.merged, tail.base, tail.half, h, table, true)
		differs, nonfinite = differs+d, nonfinite+nf
		for i := range 3 {
			ts, tf := dot2Go(tail.base, x[i][v:], tail.half, ax[i][v:])
			diff[i], floor[i] = diff[i]+ts, floor[i]+tf
		}
	}
	return differs, nonfinite, true
}

// projBF16x3AVX2 is projectBF16x3's loop over n elements, a multiple of 4,
// not 0: out holds the three Σ (M−B)·x, then the three Σ ½ulp(M)·|x|.
//
//go:noescape
func projBF16x3AVX2(merged, base *byte, x0, x1, x2, ax0, ax1, ax2 *float64, n int, minField, precision uint64, out *[6]float64, counts *[8]uint64)

// useFMA turns on projBF16x3FMA: AVX2 and FMA3.
func useFMA() bool { return cpuFMA() }

func allFinite(v []float64) bool {
	for _, x := range v {
		if x-x != 0 {
			return false
		}
	}
	return true
}

// projBF16x3FMA is projectBF16x3's loop over n elements, a multiple of 8,
// not 0, for rows with no NaN or Inf (else some output is not finite): out
// holds the three Σ (M−B)·x, then the three Σ ½ulp(M)·|x|, from sx =
// |x|·2^-8; differs the per-lane counts of differing elements.
//
//go:noescape
func projBF16x3FMA(merged, base *byte, x0, x1, x2, sx0, sx1, sx2 *float64, n int, out *[6]float64, differs *[4]uint64)
