//go:build !purego

package cpufeature

// detect reads CPUID and XCR0: AVX2 needs AVX2 (leaf 7, EBX bit 5), AVX
// and OSXSAVE (leaf 1, ECX bits 28 and 27) and the OS saving the XMM and
// YMM registers (XCR0 bits 1 and 2); FMA and F16C are leaf 1's ECX bits 12
// and 29; AVX-512 needs AVX512F (leaf 7, EBX bit 16) and the OS saving the
// opmask and ZMM registers too (XCR0 bits 5 to 7).
func detect() Set {
	maxLeaf, _, _, _ := cpuid(0, 0)
	if maxLeaf < 7 {
		return Set{}
	}
	_, _, c1, _ := cpuid(1, 0)
	const fma, osxsave, avx, f16c = 1 << 12, 1 << 27, 1 << 28, 1 << 29
	if c1&osxsave == 0 || c1&avx == 0 {
		return Set{}
	}
	xcr0 := xgetbv()
	_, b7, _, _ := cpuid(7, 0)
	avx2 := b7&(1<<5) != 0 && xcr0&6 == 6
	return Set{
		AVX2:    avx2,
		FMA:     avx2 && c1&fma != 0,
		F16C:    avx2 && c1&f16c != 0,
		AVX512F: b7&(1<<16) != 0 && xcr0&0xE6 == 0xE6,
	}
}

//go:noescape
func cpuid(leaf, sub uint32) (a, b, c, d uint32)

func xgetbv() (lo uint32)
