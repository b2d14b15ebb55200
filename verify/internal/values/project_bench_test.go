package values

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ckptcheck/ckptcheck/safetensors"
)

// BenchmarkProjectBF16x3 times one row of the three-probe BF16 projection
// at row lengths whose probes fit L1 and do not.
func BenchmarkProjectBF16x3(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	bits, _ := newHalfULPBits(safetensors.BF16)
	table := halfULPTable(safetensors.BF16)
	for _, n := range []int{256, 1024, 3072} {
		mb, bb := make([]byte, 2*n), make([]byte, 2*n)
		for i := range n {
			v := uint16(0x3f00 + rng.IntN(0x100))
			mb[2*i], mb[2*i+1], bb[2*i], bb[2*i+1] = byte(v), byte(v>>8), byte(v+1), byte(v>>8)
		}
		probes, abs, scaled := make([][]float64, 3), make([][]float64, 3), make([][]float64, 3)
		for q := range 3 {
			probes[q], abs[q], scaled[q] = make([]float64, n), make([]float64, n), make([]float64, n)
			for i := range n {
				probes[q][i] = rng.NormFloat64()
				abs[q][i] = math.Abs(probes[q][i])
				scaled[q][i] = math.Ldexp(abs[q][i], -8)
			}
		}
		diff, floor := make([]float64, 3), make([]float64, 3)
		for _, fma := range []bool{false, true} {
			b.Run(fmt.Sprintf("n=%d/fma=%v", n, fma), func(b *testing.B) {
				sx := scaled
				if !fma {
					sx = nil
				}
				b.SetBytes(int64(4 * n))
				for b.Loop() {
					projectBF16x3(mb, bb, probes, abs, sx, bits, table, diff, floor, &projectScratch{})
				}
			})
		}
	}
}
