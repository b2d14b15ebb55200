//go:build !amd64 || purego

package quant

import "github.com/ckptcheck/ckptcheck/tensorfile"

// Without the vector loops the Go loops do all the work.

func e4m3Scaled(dst, steps []float32, codes []byte, s float32) int { return 0 }

func e4m3Blocks(dst, steps []float32, codes, scales []byte, width int) int { return 0 }

func awqRows8(vals, steps []float32, at, cols uint64, qw []byte, stride, group uint64, luts *[8]affineLUTs, in *[8]bool) uint64 {
	return 0
}

func mlxFill16(l *affineLUTs, s, b float32, t tensorfile.DType, steps bool) bool { return false }

func q8Scaled(b []byte, y, steps []float32) bool { return false }

func unpack4Strided(vals, steps []float32, at uint64, qw []byte, stride, n uint64, luts *affineLUTs) uint64 {
	return 0
}

func unpack4Groups(vals, steps []float32, at uint64, qw []byte, stride, words uint64, zs []int32, ss []float32, sd tensorfile.DType, luts *affineLUTs) uint64 {
	return 0
}

func q4kBlocks(src []byte, y, steps []float32) bool { return false }

func widen(d tensorfile.DType, src []byte, dst []float64, n int) int { return 0 }

func fill16F16(l *affineLUTs, z int32, s float32, steps bool) bool { return false }

// hasAVX2 is false: the tests that compare the loops call it.
var hasAVX2 = func() bool { return false }
