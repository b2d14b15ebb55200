//go:build amd64 && !purego

package quant

import (
	"math"

	"github.com/ckptcheck/ckptcheck/internal/cpufeature"

	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// The AVX2 loops of vector_*_amd64.s, for the decoders that dominate a
// value comparison of a quantized export: they write the bits the Go loops
// write. internal/cpufeature asks the CPU once, at the first decode that
// could use them.
// A variable: tests turn the vector loops off to compare them with the Go ones.
var hasAVX2 = func() bool { return cpufeature.X86().AVX2 }

// e4m3ScaledAVX2 writes t[b]·s of n (a multiple of 8) E4M3 codes into
// dst and, unless steps is nil, e4m3Steps[b]·|s| into steps; nan is the
// table's NaN. s must not be a NaN (two NaNs' product is the Go loop's).
//
//go:noescape
func e4m3ScaledAVX2(dst, steps *float32, codes *byte, n int, s float32, nan uint32)

// q8BlocksAVX2 writes int8(q)·d of n Q8_0 blocks' codes, from src, into
// dst and, unless steps is nil, their steps (see stepsQ8_0) into steps;
// each block's d is its half's entry in f16.
//
//go:noescape
func q8BlocksAVX2(dst, steps *float32, src *byte, f16 *[1 << 16]float32, n int)

// unpack4StridedAVX2 writes the eight 4-bit codes of each of n words,
// stride bytes apart from qw, low first, through luts.vals into vals and,
// unless steps is nil, through luts.steps into steps.
//
//go:noescape
func unpack4StridedAVX2(vals, steps *float32, qw *byte, stride, n uintptr, luts *affineLUTs)

// unpack4Strided is the vector part of unpacking n 4-bit words, stride
// bytes apart from qw, into vals and steps (each unless nil) from at
// through luts: how many words it did (the rest is the caller's).
func unpack4Strided(vals, steps []float32, at uint64, qw []byte, stride, n uint64, luts *affineLUTs) uint64 {
	if vals == nil || !hasAVX2() {
		return 0
	}
	out := 8 * n
	_ = qw[(n-1)*stride+3] // the last word
	v := vals[at : at+out]
	var sp *float32
	if steps != nil {
		sp = &steps[at : at+out][0]
	}
	unpack4StridedAVX2(&v[0], sp, &qw[0], uintptr(stride), uintptr(n), luts)
	return n
}

// e4m3Scaled is the vector part of e4m3 decoding: how many of codes it
// wrote (the rest is the caller's).
func e4m3Scaled(dst, steps []float32, codes []byte, s float32) int {
	n := len(codes) &^ 7
	if n == 0 || s != s || !hasAVX2() {
		return 0
	}
	dst = dst[:n]
	var sp *float32
	if steps != nil {
		sp = &steps[:n][0]
	}
	e4m3ScaledAVX2(&dst[0], sp, &codes[0], n, s, 0x7FC00000)
	return n
}

// q8Scaled decodes the Q8_0 blocks of src into y and, unless steps is
// nil, their steps; false when it cannot (the caller's loops then do).
func q8Scaled(src []byte, y, steps []float32) bool {
	blocks := len(src) / 34
	if blocks == 0 || !hasAVX2() {
		return false
	}
	_, y = src[:34*blocks], y[:32*blocks]
	var sp *float32
	if steps != nil {
		sp = &steps[:32*blocks][0]
	}
	q8BlocksAVX2(&y[0], sp, &src[0], f16Table(), blocks)
	return true
}

// q4kBlocksAVX2 writes the values of n Q4_K blocks, from src, into y and,
// unless steps is nil, their steps (stepsQ4K's) into steps; each block's d
// and dmin are their halves' entries in f16.
//
//go:noescape
func q4kBlocksAVX2(y, steps *float32, src *byte, f16 *[1 << 16]float32, n int)

// q4kBlocks decodes the Q4_K blocks of src into y and, unless steps is
// nil, their steps; false when it cannot (the caller's loops then do).
func q4kBlocks(src []byte, y, steps []float32) bool {
	blocks := len(src) / 144
	if blocks == 0 || !hasAVX2() {
		return false
	}
	_, y = src[:144*blocks], y[:256*blocks]
	var sp *float32
	if steps != nil {
		sp = &steps[:256*blocks][0]
	}
	q4kBlocksAVX2(&y[0], sp, &src[0], f16Table(), blocks)
	return true
}

// fill16F16AVX2 fills the 16 entries of a 4-bit group's tables for zero
// z and F16 scale s: round_F16((q − z)·s) and, unless !steps, its step
// (affineStep), where every product rounds to a normal F16 or zero (the
// bits' way of roundF16); false when one does not, the tables then
// unfilled.
//
//go:noescape
func fill16F16AVX2(l *affineLUTs, z int32, s float32, steps bool) bool

// fill16F16 is fill for 16 codes and an F16 scale; false when the
// caller's loops must do it.
func fill16F16(l *affineLUTs, z int32, s float32, steps bool) bool {
	return hasAVX2() && fill16F16AVX2(l, z, s, steps)
}

// widenBF16AVX2 and widenF32AVX2 write n (a multiple of 8) BF16 or F32
// values of src as float64 into dst.
//
//go:noescape
func widenBF16AVX2(dst *float64, src *byte, n int)

//go:noescape
func widenF32AVX2(dst *float64, src *byte, n int)

// widen is the vector part of DecodeFloat64 of n BF16 or F32 values (src
// and dst hold them): how many it did (the rest is the caller's).
func widen(d tensorfile.DType, src []byte, dst []float64, n int) int {
	v := n &^ 7
	if v == 0 || !hasAVX2() {
		return 0
	}
	dst = dst[:v]
	if d == tensorfile.BF16 {
		widenBF16AVX2(&dst[0], &src[:2*v][0], v)
	} else {
		widenF32AVX2(&dst[0], &src[:4*v][0], v)
	}
	return v
}

//go:noescape
func unpack4GroupsAVX2(vals, steps *float32, qw *byte, stride, words uintptr, zs *int32, ss *float32, n uintptr, luts *affineLUTs, bf16 bool) (done uintptr)

// unpack4Groups decodes len(zs) whole 4-bit groups of words words each,
// stride bytes apart from qw, with scales ss of dtype sd (F16 or BF16),
// into vals and, unless nil, steps from at (the tables filled and the
// words unpacked as fill and unpack4Strided do): how many groups it did,
// stopping before one whose tables the caller's loops must fill.
func unpack4Groups(vals, steps []float32, at uint64, qw []byte, stride, words uint64, zs []int32, ss []float32, sd tensorfile.DType, luts *affineLUTs) uint64 {
	n := uint64(len(zs))
	if n == 0 || words == 0 || vals == nil || (sd != tensorfile.F16 && sd != tensorfile.BF16) || !hasAVX2() {
		return 0
	}
	ss = ss[:n]
	out := 8 * words * n
	_ = qw[(words*n-1)*stride+3] // the last word
	v := vals[at : at+out]
	var sp *float32
	if steps != nil {
		sp = &steps[at : at+out][0]
	}
	return uint64(unpack4GroupsAVX2(&v[0], sp, &qw[0], uintptr(stride), uintptr(words), &zs[0], &ss[0], uintptr(n), luts, sd == tensorfile.BF16))
}

//go:noescape
func e4m3BlocksAVX2(dst, steps *float32, codes, scales *byte, blocks, width int, nan uint32) (done int)

// e4m3Blocks decodes runs of width E4M3 codes (a multiple of 8), run i
// scaled by the F32 scale i of scales, into dst and, unless steps is nil,
// steps, as e4m3Scaled does each: how many runs it did, stopping before a
// NaN scale.
func e4m3Blocks(dst, steps []float32, codes, scales []byte, width int) int {
	blocks := len(scales) / 4
	if blocks == 0 || width == 0 || width%8 != 0 || len(codes) < blocks*width || !hasAVX2() {
		return 0
	}
	n := blocks * width
	dst = dst[:n]
	var sp *float32
	if steps != nil {
		sp = &steps[:n][0]
	}
	return e4m3BlocksAVX2(&dst[0], sp, &codes[0], &scales[0], blocks, width, 0x7FC00000)
}

//go:noescape
func awqRows8AVX2(vals, steps *float32, first, rowBytes uintptr, qw *byte, idx *[8]int32, next, octets, rows uintptr, luts *[8]affineLUTs)

// awqRows8 decodes the group columns of the rows an AWQ word holds that
// in says (columns stride bytes apart from qw) through each row's tables
// into vals and, unless nil, steps, row j's first at at + j·cols (modulo
// 2^64: rows before the range are not in it): how many columns it did,
// eight at a time (the rest is the caller's).
func awqRows8(vals, steps []float32, at, cols uint64, qw []byte, stride, group uint64, luts *[8]affineLUTs, in *[8]bool) uint64 {
	octets := group / 8
	if vals == nil || octets == 0 || stride/4 > math.MaxInt32/8 || !hasAVX2() {
		return 0
	}
	n := 8 * octets
	_ = qw[(n-1)*stride+3] // the last word
	var rows uintptr
	first, last := uint64(8), uint64(0)
	for j, ok := range in {
		if ok {
			rows |= 1 << j
			first, last = min(first, uint64(j)), uint64(j)
		}
	}
	if rows == 0 {
		return 0
	}
	v := vals[at+first*cols : at+last*cols+n] // from the first row's values to the last's
	var sp *float32
	if steps != nil {
		sp = &steps[at+first*cols : at+last*cols+n][0]
	}
	var idx [8]int32
	for i := range idx {
		idx[i] = int32(uint64(i) * stride / 4)
	}
	awqRows8AVX2(&v[0], sp, uintptr(first), uintptr(4*cols), &qw[0], &idx, uintptr(8*stride), uintptr(octets), rows, luts)
	return n
}

//go:noescape
func mlxFill16AVX2(l *affineLUTs, s, b float32, bf16, steps bool) (ok bool)

// mlxFill16 fills an MLX 4-bit group's tables for scale s and bias b of
// dtype t (F16 or BF16) and, when steps, its steps table; false when the
// caller's loops must (other dtypes, a NaN scale or bias, F16 roundings
// that are not the bits' way).
func mlxFill16(l *affineLUTs, s, b float32, t tensorfile.DType, steps bool) bool {
	if s != s || b != b || (t != tensorfile.F16 && t != tensorfile.BF16) || !hasAVX2() {
		return false
	}
	return mlxFill16AVX2(l, s, b, t == tensorfile.BF16, steps)
}
