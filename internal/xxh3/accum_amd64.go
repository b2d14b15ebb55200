package xxh3

import "sync/atomic"

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

// detectKernel reads CPUID and XCR0: AVX2 needs AVX2 (leaf 7, EBX bit 5),
// AVX and OSXSAVE (leaf 1, ECX bits 28 and 27) and the OS saving the YMM
// registers (XCR0 bits 1 and 2); AVX-512 needs AVX512F (leaf 7, EBX bit
// 16) and the OS saving the opmask and ZMM registers too (XCR0 bits 5-7).
func detectKernel() int32 {
	maxLeaf, _, _, _ := cpuid(0, 0)
	if maxLeaf < 7 {
		return scalar
	}
	_, _, ecx1, _ := cpuid(1, 0)
	if ecx1&(1<<27) == 0 || ecx1&(1<<28) == 0 {
		return scalar
	}
	xcr0 := xgetbv0()
	_, ebx7, _, _ := cpuid(7, 0)
	switch {
	case ebx7&(1<<16) != 0 && xcr0&0xE6 == 0xE6:
		return useAVX512
	case ebx7&(1<<5) != 0 && xcr0&6 == 6:
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

//go:noescape
func cpuid(leaf, sub uint32) (eax, ebx, ecx, edx uint32)

func xgetbv0() uint32
