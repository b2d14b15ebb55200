package xxh3

import (
	"sync/atomic"

	"github.com/ckptcheck/ckptcheck/internal/cpufeature"
)

// The accumulate kernels a CPU can run, best last.
const (
	unknown = iota // the CPU was not asked yet
	scalar
	useAVX2
	useAVX512
)

// kernel is the kernel chosen, unknown until the first long input.
var kernel atomic.Int32

// chosenKernel asks the CPU the first time only: package init asks nothing.
func chosenKernel() int32 {
	k := kernel.Load()
	if k == unknown {
		k = detectKernel()
		kernel.Store(k)
	}
	return k
}

// detectKernel picks the best kernel the CPU and OS support
// (internal/cpufeature).
func detectKernel() int32 {
	switch f := cpufeature.X86(); {
	case f.AVX512F:
		return useAVX512
	case f.AVX2:
		return useAVX2
	}
	return scalar
}

func accumulate(acc *[8]uint64, data, secret []byte, stripes int) {
	if stripes <= 0 {
		return
	}
	k := chosenKernel()
	if k == scalar {
		accumulateScalar(acc, data, secret, stripes)
		return
	}
	// The bounds the assembly reads within.
	_ = data[stripes*stripeLen-1]
	_ = secret[8*(stripes-1)+stripeLen-1]
	if k == useAVX512 {
		accumulateAVX512(acc, &data[0], &secret[0], stripes)
	} else {
		accumulateAVX2(acc, &data[0], &secret[0], stripes)
	}
}

func accumulateBlocks(acc *[8]uint64, data []byte) {
	blocks := len(data) / blockLen
	if blocks == 0 {
		return
	}
	switch chosenKernel() {
	case useAVX512:
		accumulateBlocksAVX512(acc, &data[0], &kSecret, blocks)
	case useAVX2:
		accumulateBlocksAVX2(acc, &data[0], &kSecret, blocks)
	default:
		accumulateBlocksScalar(acc, data)
	}
}

// accumulateAVX2 and accumulateAVX512 are accumulateScalar in vectors.
//
//go:noescape
func accumulateAVX2(acc *[8]uint64, data, secret *byte, stripes int)

//go:noescape
func accumulateAVX512(acc *[8]uint64, data, secret *byte, stripes int)

// accumulateBlocksAVX2 and accumulateBlocksAVX512 are
// accumulateBlocksScalar in vectors, over blocks whole blocks at data.
//
//go:noescape
func accumulateBlocksAVX2(acc *[8]uint64, data *byte, secret *[192]byte, blocks int)

//go:noescape
func accumulateBlocksAVX512(acc *[8]uint64, data *byte, secret *[192]byte, blocks int)
