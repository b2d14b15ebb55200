//go:build !amd64 || purego

package quant

// Without the vector loops the Go loops do all the work.

func e4m3Scaled(dst, steps []float32, codes []byte, s float32) int { return 0 }

func q8Scaled(b []byte, y, steps []float32) bool { return false }
