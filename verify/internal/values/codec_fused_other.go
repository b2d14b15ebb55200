//go:build !amd64 || purego

package values

import "github.com/ckptcheck/ckptcheck/safetensors"

// Without a codec loop the sub-chunked path makes its two passes.
func codecStepLoops(p, e safetensors.DType, tol Tolerance) (gated, busy codecLoop, mirror bool) {
	return nil, nil, false
}
