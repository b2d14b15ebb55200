package xxh3

import (
	"fmt"
	"testing"
)

func BenchmarkHash(b *testing.B) {
	for _, n := range []int{16, 240, 4 << 10, 1 << 20, 16 << 20} {
		input := pattern(n)
		b.Run(fmt.Sprint("n=", n), func(b *testing.B) {
			b.SetBytes(int64(n))
			for b.Loop() {
				Hash(input)
			}
		})
	}
}

// BenchmarkHasher writes 1 MiB in pieces of 64 KiB, as a reader would.
func BenchmarkHasher(b *testing.B) {
	input := pattern(1 << 20)
	h := New()
	b.SetBytes(int64(len(input)))
	for b.Loop() {
		h.Reset()
		for p := input; len(p) > 0; p = p[64<<10:] {
			h.Write(p[:64<<10])
		}
		h.Sum64()
	}
}
