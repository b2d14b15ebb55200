//go:build !amd64 || purego

package values

import "github.com/ckptcheck/ckptcheck/safetensors"

// Without a vector step loop, measureOneSide does the work.
func vectorStepLoop(p, e safetensors.DType) stepLoop { return nil }

func leanStepLoop(p, e safetensors.DType) stepLoop { return nil }
