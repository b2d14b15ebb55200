//go:build !amd64 || purego

package values

import "github.com/ckptcheck/ckptcheck/safetensors"

// Without the assembly the codec loop is the Go one (codec_fused_go.go),
// gated and busy alike, for a codec on the exported side (or F32 on both:
// its terms do not depend on which side is decoded); a codec published
// against BF16 or F16 makes the two passes.
func codecStepLoops(p, e safetensors.DType, tol Tolerance) (gated, busy codecLoop, mirror bool) {
	if kernelChoice == kernelsReference {
		return nil, nil, false
	}
	loop := goCodecLoop(p, e)
	return loop, loop, false
}
