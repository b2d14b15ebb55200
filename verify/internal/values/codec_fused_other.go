//go:build !amd64 || purego

package values

import "github.com/ckptcheck/ckptcheck/safetensors"

// Without the assembly the codec loop is the Go one (codec_fused_go.go),
// gated and busy alike.
func codecStepLoops(p, e safetensors.DType, tol Tolerance) (gated, busy codecLoop) {
	if kernelChoice == kernelsReference {
		return nil, nil
	}
	loop := goCodecLoop(p, e)
	return loop, loop
}
