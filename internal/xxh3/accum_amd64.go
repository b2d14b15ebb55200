package xxh3

import "sync/atomic"

// avx2State is 0 until the CPU has been asked, then avx2No or avx2Yes.
var avx2State atomic.Int32

const (
	avx2No  = 1
	avx2Yes = 2
)

// hasAVX2 says whether the CPU and the OS run AVX2, asking the CPU the
// first time only: package init asks nothing.
func hasAVX2() bool {
	s := avx2State.Load()
	if s == 0 {
		s = avx2No
		if detectAVX2() {
			s = avx2Yes
		}
		avx2State.Store(s)
	}
	return s == avx2Yes
}

// detectAVX2 reads CPUID: AVX2 (leaf 7, EBX bit 5) with AVX and OSXSAVE
// (leaf 1, ECX bits 28 and 27), and the OS saving the YMM registers
// (XCR0 bits 1 and 2).
func detectAVX2() bool {
	maxLeaf, _, _, _ := cpuid(0, 0)
	if maxLeaf < 7 {
		return false
	}
	_, _, ecx1, _ := cpuid(1, 0)
	if ecx1&(1<<27) == 0 || ecx1&(1<<28) == 0 || xgetbv0()&6 != 6 {
		return false
	}
	_, ebx7, _, _ := cpuid(7, 0)
	return ebx7&(1<<5) != 0
}

func accumulate(acc *[8]uint64, data, secret []byte, stripes int) {
	if stripes <= 0 {
		return
	}
	if hasAVX2() {
		// The bounds the assembly reads within.
		_ = data[stripes*stripeLen-1]
		_ = secret[8*(stripes-1)+stripeLen-1]
		accumulateAVX2(acc, &data[0], &secret[0], stripes)
		return
	}
	accumulateScalar(acc, data, secret, stripes)
}

func accumulateBlocks(acc *[8]uint64, data []byte) {
	blocks := len(data) / blockLen
	if blocks == 0 {
		return
	}
	if hasAVX2() {
		accumulateBlocksAVX2(acc, &data[0], &kSecret, blocks)
		return
	}
	accumulateBlocksScalar(acc, data)
}

// accumulateAVX2 is accumulateScalar in AVX2.
//
//go:noescape
func accumulateAVX2(acc *[8]uint64, data, secret *byte, stripes int)

// accumulateBlocksAVX2 is accumulateBlocksScalar in AVX2, over blocks
// whole blocks at data.
//
//go:noescape
func accumulateBlocksAVX2(acc *[8]uint64, data *byte, secret *[192]byte, blocks int)

//go:noescape
func cpuid(leaf, sub uint32) (eax, ebx, ecx, edx uint32)

func xgetbv0() uint32
