package quant

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/x448/float16"
)

// TestRoundF16 checks roundF16's fast way against the conversion, around
// every edge of F16's normal range and on random float32 bits.
func TestRoundF16(t *testing.T) {
	want := func(v float32) float32 { return f16Table()[float16.Fromfloat32(v).Bits()] }
	var vs []float32
	for _, edge := range []float32{0, 6.1035156e-05, 65504, 65520, 65519.996, 1, 0.5} {
		b := math.Float32bits(edge)
		for d := uint32(0); d < 4097; d += 1 + d/2 {
			vs = append(vs, math.Float32frombits(b+d), math.Float32frombits(b-d))
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 1 << 16 {
		vs = append(vs, math.Float32frombits(rng.Uint32()), float32(rng.NormFloat64())*float32(math.Ldexp(1, rng.IntN(40)-20)))
	}
	for _, v := range vs {
		for _, x := range []float32{v, -v} {
			got, w := roundF16(x), want(x)
			if math.Float32bits(got) != math.Float32bits(w) && !(got != got && w != w) {
				t.Fatalf("roundF16(%g) = %g, want %g", x, got, w)
			}
		}
	}
}
