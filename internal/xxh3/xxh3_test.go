package xxh3

import (
	"fmt"
	"math"
	"testing"
)

// referenceVectors are XXH3_64bits(pattern(n), n) from the reference,
// xxhash.h of Cyan4973/xxHash at b2e9dbb05fb7f45ad662e67969e92c48b9b32247
// built with gcc -O2 (XXH_INLINE_ALL): every length class and each side of
// its bounds, stripes (64), blocks (1024) and the streaming buffer (256).
var referenceVectors = []struct {
	n    int
	want uint64
}{
	{0, 0x2d06800538d394c2},
	{1, 0x429e81bc6744101c},
	{2, 0xa65771cbfd464c2d},
	{3, 0x32dbb5c7774cc94f},
	{4, 0x65775238ca34c06f},
	{5, 0xd3bdebb681920cdf},
	{7, 0x39027a52dcba383e},
	{8, 0x90b760c9d253d0ff},
	{9, 0x15ae9f843bb50ea4},
	{10, 0x5734067869cc9237},
	{15, 0x54b0978486c08a15},
	{16, 0x372c92fa68129c98},
	{17, 0xb5d6b9c1898bd9d6},
	{18, 0x02e08656a1e1bfce},
	{31, 0x79c8355e61bb90b5},
	{32, 0x0ab1dbf9e9f8c22c},
	{33, 0x4f4ae280e8465c3c},
	{47, 0x79f000e3aa917ff3},
	{48, 0xcb8086c34610a21c},
	{49, 0xbbbc7e38fbbbfc23},
	{63, 0x1f695e8f419c1eaa},
	{64, 0x84fcac4cce9f990d},
	{65, 0x2c9f18dff914a8bd},
	{80, 0x814e049111d7eab0},
	{95, 0xc9924a1f0459a80c},
	{96, 0xe1e1ba1b4e47ded7},
	{97, 0x5cc877781800cb6b},
	{112, 0xdaa88a9d4fef52be},
	{127, 0xc33e60b9db382d32},
	{128, 0xc59e505a97d029e0},
	{129, 0xf9e651a476d6d3ca},
	{130, 0xa54d13e6fd3143d3},
	{143, 0x4916c14bd2fd8e2a},
	{144, 0x6630fc8e0296f27f},
	{145, 0xd64fbe6a2bd5a604},
	{159, 0xa92d4b6d657c5f38},
	{160, 0x35073e7743b6b66a},
	{200, 0x85d691776ef97dbe},
	{224, 0x59b2ad0b00427e29},
	{239, 0x4d083af3e4a9a1cf},
	{240, 0x967597e635f3c527},
	{241, 0xd6afac6f8fa85b01},
	{242, 0x794d3e0c56018e33},
	{255, 0x22062a421972fdde},
	{256, 0x9e6593bab96413da},
	{257, 0xc7f456fff4eaca08},
	{319, 0x3983c8bf8dce5816},
	{320, 0xc728c9e2ed449218},
	{321, 0xf69dc1717f6a541b},
	{383, 0xd06ee4ab665c9373},
	{384, 0xe6b22149fd2c7a20},
	{385, 0x237111199728eadc},
	{511, 0xf8e3fbcf89733a1a},
	{512, 0x426b67e0356d303d},
	{513, 0xb757ecc047a39809},
	{1023, 0x120a0457e3e899f6},
	{1024, 0xbb9f0c3761cdfd54},
	{1025, 0x95edccc1adc4d895},
	{1087, 0xb954c65e909b59e2},
	{1088, 0xe8391a3978cbcf06},
	{1089, 0xb6e2a9bc2973e16a},
	{1984, 0x6f2ba70f96490216},
	{2047, 0x52e24987b24854e3},
	{2048, 0x278f7a6a39416b51},
	{2049, 0x644272755e8980a0},
	{3071, 0x9d33e1673a494ac0},
	{3072, 0x17b56cd9d97f956a},
	{3073, 0xea543cd27381e7c8},
	{4096, 0x436f521f6688c5ed},
	{10000, 0xa52f67ee0d473e72},
	{16383, 0x60497206ebb94f64},
	{16384, 0x0b9eba15ef84a59d},
	{16385, 0x18f80f278a493e81},
	{65536, 0xb25b6166131fa281},
	{100000, 0xb2d424868b772e96},
	{1048575, 0x662714b4014f57f4},
	{1048576, 0x6a1e48380a87d1af},
	{1048577, 0x9388f1672403e3d1},
	{3000001, 0x3e4e9c09fb6b45cd},
}

// pattern is the reference vectors' input: the top bytes of a 32-bit LCG
// (Numerical Recipes' constants) seeded with 1.
func pattern(n int) []byte {
	b := make([]byte, n)
	x := uint32(1)
	for i := range b {
		x = x*1664525 + 1013904223
		b[i] = byte(x >> 24)
	}
	return b
}

func TestHashReference(t *testing.T) {
	input := pattern(referenceVectors[len(referenceVectors)-1].n)
	for _, v := range referenceVectors {
		if got := Hash(input[:v.n]); got != v.want {
			t.Errorf("Hash(%d bytes) = %#016x, want %#016x", v.n, got, v.want)
		}
	}
}

// TestHasherReference writes the reference inputs in pieces of every size
// that meets a bound of the buffer or a stripe differently.
func TestHasherReference(t *testing.T) { checkHasher(t, math.MaxInt) }

// checkHasher is TestHasherReference on the inputs up to maxLen bytes.
func checkHasher(t *testing.T, maxLen int) {
	input := pattern(referenceVectors[len(referenceVectors)-1].n)
	for _, piece := range []int{1, 3, 16, 63, 64, 65, 100, 255, 256, 257, 1000, 1024, 4097, 1 << 20} {
		t.Run(fmt.Sprint("piece=", piece), func(t *testing.T) {
			h := New()
			for _, v := range referenceVectors {
				if v.n > maxLen || (piece == 1 && v.n > 100000) {
					continue // byte by byte is slow under -race
				}
				h.Reset()
				for p := input[:v.n]; len(p) > 0; {
					k := min(piece, len(p))
					h.Write(p[:k])
					p = p[k:]
				}
				if got := h.Sum64(); got != v.want {
					t.Errorf("%d bytes in pieces of %d: Sum64 = %#016x, want %#016x", v.n, piece, got, v.want)
				}
			}
		})
	}
}

func TestHasherStates(t *testing.T) {
	empty := referenceVectors[0].want
	var zero Hasher
	if got := zero.Sum64(); got != empty {
		t.Errorf("zero Hasher: Sum64 = %#x, want %#x", got, empty)
	}
	zero.Write(pattern(300))
	if got, want := zero.Sum64(), Hash(pattern(300)); got != want {
		t.Errorf("zero Hasher after 300 bytes: Sum64 = %#x, want %#x", got, want)
	}
	h := New()
	h.Write(pattern(5000))
	first := h.Sum64()
	if again := h.Sum64(); again != first {
		t.Errorf("Sum64 changed the state: %#x then %#x", first, again)
	}
	h.Write(nil)
	if got := h.Sum64(); got != first {
		t.Errorf("an empty Write changed the sum: %#x then %#x", first, got)
	}
	h.Reset()
	if got := h.Sum64(); got != empty {
		t.Errorf("after Reset: Sum64 = %#x, want %#x", got, empty)
	}
	if got, want := fmt.Sprintf("%x", New().Sum([]byte{0xAA})), fmt.Sprintf("aa%016x", empty); got != want {
		t.Errorf("Sum = %s, want %s (big-endian, appended)", got, want)
	}
	if _, err := h.WriteString("abc"); err != nil || h.Sum64() != Hash([]byte("abc")) {
		t.Errorf("WriteString(abc): err %v, sum %#x, want %#x", err, h.Sum64(), Hash([]byte("abc")))
	}
}

// FuzzHasher compares Hash with the Hasher fed the same bytes in pieces
// whose sizes come from the fuzzer.
func FuzzHasher(f *testing.F) {
	f.Add(pattern(0), []byte{})
	f.Add(pattern(241), []byte{1, 255})
	f.Add(pattern(3000), []byte{200, 17, 64, 0, 255, 255, 3})
	f.Fuzz(func(t *testing.T, data, splits []byte) {
		h := New()
		p := data
		for _, s := range splits {
			// Pieces up to 4 KiB: across the buffer, stripes and blocks.
			k := min(int(s)*16+int(s)%7, len(p))
			h.Write(p[:k])
			p = p[k:]
		}
		h.Write(p)
		if got, want := h.Sum64(), Hash(data); got != want {
			t.Fatalf("%d bytes split by %v: Hasher %#016x, Hash %#016x", len(data), splits, got, want)
		}
	})
}

// TestNoAllocations: hashing allocates nothing, whatever the length.
func TestNoAllocations(t *testing.T) {
	input := pattern(5000)
	h := New()
	for _, n := range []int{0, 3, 8, 16, 100, 200, 241, 5000} {
		if a := testing.AllocsPerRun(10, func() { Hash(input[:n]) }); a != 0 {
			t.Errorf("Hash(%d bytes): %v allocations", n, a)
		}
		if a := testing.AllocsPerRun(10, func() { h.Reset(); h.Write(input[:n]); h.Sum64() }); a != 0 {
			t.Errorf("Hasher of %d bytes: %v allocations", n, a)
		}
	}
}
