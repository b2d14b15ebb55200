//go:build !amd64

package verify

import "github.com/ckptcheck/ckptcheck/safetensors"

// Without a vector path the portable loops do all the work.

func vectorKernel(p, e safetensors.DType) func(p, e *byte, n int, st *laneState) { return nil }

func vectorValuesKernel() func(p, e *byte, n int, st *laneState) { return nil }
