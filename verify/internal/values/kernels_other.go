//go:build !amd64 || purego

package values

import "github.com/ckptcheck/ckptcheck/safetensors"

// Without a vector path (another architecture, or -tags purego) the
// portable loops do all the work.

func vectorKernel(p, e safetensors.DType) func(p, e *byte, n int, st *laneState) { return nil }

func vectorValuesKernel() func(p, e *byte, n int, st *laneState) { return nil }
