//go:build !purego

package values

// stepSumsAVX2 is the vector loop of the one-sided step pass
// (ggml_steps_amd64.s) over n values, n a multiple of 4: a and b BF16
// where abf, bbf, else F32; st the F32 steps.
//
//go:noescape
func stepSumsAVX2(a, b, st *byte, n int, abf, bbf bool, out *stepSums)

// vectorStepSums returns the vector loop, or nil without AVX2 or with the
// portable kernels chosen.
func vectorStepSums() func(a, b, st *byte, n int, abf, bbf bool, out *stepSums) {
	if !cpuAVX2 || kernelChoice == kernelsPortable {
		return nil
	}
	return stepSumsAVX2
}
