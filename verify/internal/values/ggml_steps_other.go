//go:build !amd64 || purego

package values

func vectorStepSums() func(a, b, st *byte, n int, abf, bbf bool, out *stepSums) { return nil }
