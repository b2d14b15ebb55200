package cpufeature

import "sync"

// Set is what the CPU and operating system support.
type Set struct {
	AVX2    bool // AVX2, with the YMM state saved
	FMA     bool // FMA3, with AVX2
	F16C    bool // F16C, with AVX2
	AVX512F bool // AVX-512 Foundation, with the opmask and ZMM state saved
}

var detected = sync.OnceValue(detect)

// X86 is the running CPU's Set, detected on the first call.
func X86() Set { return detected() }
