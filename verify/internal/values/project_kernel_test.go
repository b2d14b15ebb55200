package values

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ckptcheck/ckptcheck/quant"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// TestDot2MatchesPortable checks the vector dot2 against dot2Go at lengths
// around the vector step.
func TestDot2MatchesPortable(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 1024, 1031} {
		a, x, h, ax := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
		for i := range n {
			a[i], x[i], h[i] = rng.NormFloat64(), rng.NormFloat64(), rng.Float64()
			ax[i] = math.Abs(x[i])
		}
		s, f := dot2(a, x, h, ax)
		ws, wf := dot2Go(a, x, h, ax)
		if math.Abs(s-ws) > 1e-12*(1+math.Abs(ws)) || math.Abs(f-wf) > 1e-12*(1+wf) {
			t.Errorf("n=%d: dot2 = %v, %v; portable %v, %v", n, s, f, ws, wf)
		}
	}
}

// TestDeltaRowHalfULPBits checks the bit-computed half-ULP against the
// table, and the counts, for every merged dtype the bits know.
func TestDeltaRowHalfULPBits(t *testing.T) {
	vals := []float64{0, math.Copysign(0, -1), 1, -1.5, 3e-39, 1e-45, 6e-8, 65504, 1e30, -2.5e-5, math.Inf(1), math.NaN()}
	for _, d := range []safetensors.DType{safetensors.BF16, safetensors.F16, safetensors.F32} {
		bits, ok := newHalfULPBits(d)
		if !ok {
			t.Fatalf("%s: no bits", d)
		}
		table := halfULPTable(d)
		merged := append([]float64(nil), vals...)
		base := make([]float64, len(vals))
		base[len(base)-1] = math.NaN() // NaN = NaN
		half := make([]float64, len(vals))
		differs, nonfinite := deltaRow(merged, base, half, bits, table, true)
		for i, m := range vals {
			if want := table[(math.Float64bits(m)>>52)&0x7ff]; half[i] != want {
				t.Errorf("%s: half-ULP of %v = %v, table %v", d, m, half[i], want)
			}
		}
		// 1, -1.5, 3e-39, 1e-45, 6e-8, 65504, 1e30, -2.5e-5, +Inf differ.
		if differs != 9 || nonfinite != 2 {
			t.Errorf("%s: differs %d, nonfinite %d; want 9, 2", d, differs, nonfinite)
		}
	}
}

// TestDeltaRowFastMatchesPortable checks the vector delta loop against
// deltaRow on rows with zeros, signed zeros, NaNs on either or both sides,
// infinities and values across the exponent range.
func TestDeltaRowFastMatchesPortable(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	special := []float64{0, math.Copysign(0, -1), math.NaN(), math.Inf(1), math.Inf(-1), 1e-45, 3e-39, 1e30}
	for _, d := range []safetensors.DType{safetensors.BF16, safetensors.F16, safetensors.F32, safetensors.F64} {
		bits, useBits := newHalfULPBits(d)
		table := halfULPTable(d)
		for _, n := range []int{0, 3, 4, 5, 64, 1027} {
			merged, base := make([]float64, n), make([]float64, n)
			for i := range n {
				merged[i] = rng.NormFloat64() * math.Ldexp(1, rng.IntN(80)-40)
				base[i] = merged[i]
				switch rng.IntN(4) {
				case 0:
					merged[i] = special[rng.IntN(len(special))]
				case 1:
					base[i] = special[rng.IntN(len(special))]
				case 2:
					base[i] += 1e-3
				}
			}
			b1, b2 := append([]float64(nil), base...), append([]float64(nil), base...)
			h1, h2 := make([]float64, n), make([]float64, n)
			d1, nf1 := deltaRow(merged, b1, h1, bits, table, useBits)
			d2, nf2 := deltaRowFast(merged, b2, h2, bits, table, useBits)
			if d1 != d2 || nf1 != nf2 {
				t.Errorf("%s n=%d: counts %d, %d; fast %d, %d", d, n, d1, nf1, d2, nf2)
			}
			for i := range n {
				if math.Float64bits(b1[i]) != math.Float64bits(b2[i]) && !(b1[i] != b1[i] && b2[i] != b2[i]) || h1[i] != h2[i] {
					t.Errorf("%s n=%d [%d] (m %v): delta %v, half %v; fast %v, %v", d, n, i, merged[i], b1[i], h1[i], b2[i], h2[i])
					break
				}
			}
		}
	}
}

// TestDeltaBF16MatchesPortable checks the fused BF16 loop against
// decoding both rows and deltaRow, on random bit patterns (NaNs, infinities
// and subnormals included) and equal elements.
func TestDeltaBF16MatchesPortable(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	bits, _ := newHalfULPBits(safetensors.BF16)
	table := halfULPTable(safetensors.BF16)
	for _, n := range []int{1, 3, 4, 5, 7, 64, 1027} {
		mb, bb := make([]byte, 2*n), make([]byte, 2*n)
		for i := range 2 * n {
			mb[i], bb[i] = byte(rng.Uint32()), byte(rng.Uint32())
		}
		for i := 0; i < n; i += 3 {
			bb[2*i], bb[2*i+1] = mb[2*i], mb[2*i+1]
		}
		merged, b1 := make([]float64, n), make([]float64, n)
		quant.DecodeFloat64(safetensors.BF16, mb, merged)
		quant.DecodeFloat64(safetensors.BF16, bb, b1)
		h1, b2, h2 := make([]float64, n), make([]float64, n), make([]float64, n)
		d1, nf1 := deltaRow(merged, b1, h1, bits, table, true)
		d2, nf2, ok := deltaBF16(mb, bb, b2, h2, bits, table)
		if !ok {
			continue // no AVX2, or purego
		}
		if d1 != d2 || nf1 != nf2 {
			t.Errorf("n=%d: counts %d, %d; fused %d, %d", n, d1, nf1, d2, nf2)
		}
		for i := range n {
			if math.Float64bits(b1[i]) != math.Float64bits(b2[i]) && !(b1[i] != b1[i] && b2[i] != b2[i]) || h1[i] != h2[i] {
				t.Errorf("n=%d [%d]: delta %v, half %v; fused %v, %v", n, i, b1[i], h1[i], b2[i], h2[i])
				break
			}
		}
	}
}

// TestDot2sMatchesPortable checks the three-probe pass against dot2Go for
// every probe count.
func TestDot2sMatchesPortable(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, n := range []int{1, 8, 13, 1024} {
		for k := range 8 {
			a, h := make([]float64, n), make([]float64, n)
			probes, abs := make([][]float64, k), make([][]float64, k)
			for i := range n {
				a[i], h[i] = rng.NormFloat64(), rng.Float64()
			}
			for q := range k {
				probes[q], abs[q] = make([]float64, n), make([]float64, n)
				for i := range n {
					probes[q][i] = rng.NormFloat64()
					abs[q][i] = math.Abs(probes[q][i])
				}
			}
			diff, floor := make([]float64, k), make([]float64, k)
			dot2s(a, h, probes, abs, diff, floor)
			for q := range k {
				ws, wf := dot2Go(a, probes[q], h, abs[q])
				if math.Abs(diff[q]-ws) > 1e-12*(1+math.Abs(ws)) || math.Abs(floor[q]-wf) > 1e-12*(1+wf) {
					t.Errorf("n=%d k=%d probe %d: %v, %v; portable %v, %v", n, k, q, diff[q], floor[q], ws, wf)
				}
			}
		}
	}
}

// TestProjectBF16x3MatchesPortable checks the fused three-probe BF16 loop
// against deltaRow and dot2Go on random bit patterns.
func TestProjectBF16x3MatchesPortable(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	bits, _ := newHalfULPBits(safetensors.BF16)
	table := halfULPTable(safetensors.BF16)
	for _, n := range []int{1, 4, 6, 64, 1027} {
		mb, bb := make([]byte, 2*n), make([]byte, 2*n)
		for i := range 2 * n {
			mb[i], bb[i] = byte(rng.Uint32()), byte(rng.Uint32())
		}
		for i := 0; i < n; i += 3 {
			bb[2*i], bb[2*i+1] = mb[2*i], mb[2*i+1]
		}
		for i := 1; i < 2*n; i += 4 {
			mb[i] &^= 0x40 // half the elements finite and small
			bb[i] &^= 0x40
		}
		probes, abs := make([][]float64, 3), make([][]float64, 3)
		for q := range 3 {
			probes[q], abs[q] = make([]float64, n), make([]float64, n)
			for i := range n {
				probes[q][i] = rng.NormFloat64()
				abs[q][i] = math.Abs(probes[q][i])
			}
		}
		merged, base, half := make([]float64, n), make([]float64, n), make([]float64, n)
		quant.DecodeFloat64(safetensors.BF16, mb, merged)
		quant.DecodeFloat64(safetensors.BF16, bb, base)
		wd, wnf := deltaRow(merged, base, half, bits, table, true)
		diff, floor := make([]float64, 3), make([]float64, 3)
		d, nf, ok := projectBF16x3(mb, bb, probes, abs, nil, bits, table, diff, floor, &projectScratch{})
		if !ok {
			continue // no AVX2, or purego
		}
		if d != wd || nf != wnf {
			t.Errorf("n=%d: counts %d, %d; want %d, %d", n, d, nf, wd, wnf)
		}
		for q := range 3 {
			ws, wf := dot2Go(base, probes[q], half, abs[q])
			same := func(got, want float64) bool {
				return math.Abs(got-want) <= 1e-9*(1+math.Abs(want)) || got == want || math.IsNaN(got) && math.IsNaN(want)
			}
			if !same(diff[q], ws) || !same(floor[q], wf) {
				t.Errorf("n=%d probe %d: %v, %v; portable %v, %v", n, q, diff[q], floor[q], ws, wf)
			}
		}
	}
}

// TestProjectBF16x3FusedMatchesPortable checks the FMA loop (rows with no
// NaN or Inf, and rows where one makes it hand over to the exact loop)
// against deltaRow and dot2Go, subnormals, zeros and equal elements
// included.
func TestProjectBF16x3FusedMatchesPortable(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	bits, _ := newHalfULPBits(safetensors.BF16)
	table := halfULPTable(safetensors.BF16)
	finite := func() uint16 {
		for {
			if v := uint16(rng.Uint32()); v&0x7f80 != 0x7f80 {
				if rng.IntN(8) == 0 {
					v &= 0x807f // a subnormal or a zero
				}
				return v
			}
		}
	}
	for _, special := range []uint16{0, 0x7fc0, 0x7f80, 0xff80} {
		for _, n := range []int{8, 9, 15, 64, 1027, 1031} {
			mb, bb := make([]byte, 2*n), make([]byte, 2*n)
			for i := range n {
				m, b := finite(), finite()
				if i%3 == 0 {
					b = m
				}
				mb[2*i], mb[2*i+1], bb[2*i], bb[2*i+1] = byte(m), byte(m>>8), byte(b), byte(b>>8)
			}
			if special != 0 {
				i := rng.IntN(n)
				mb[2*i], mb[2*i+1] = byte(special), byte(special>>8)
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
			merged, base, half := make([]float64, n), make([]float64, n), make([]float64, n)
			quant.DecodeFloat64(safetensors.BF16, mb, merged)
			quant.DecodeFloat64(safetensors.BF16, bb, base)
			wd, wnf := deltaRow(merged, base, half, bits, table, true)
			diff, floor := make([]float64, 3), make([]float64, 3)
			d, nf, ok := projectBF16x3(mb, bb, probes, abs, scaled, bits, table, diff, floor, &projectScratch{})
			if !ok {
				continue // no AVX2, or purego
			}
			if d != wd || nf != wnf {
				t.Errorf("special %#x n=%d: counts %d, %d; want %d, %d", special, n, d, nf, wd, wnf)
			}
			for q := range 3 {
				ws, wf := dot2Go(base, probes[q], half, abs[q])
				var mag float64
				for i := range n {
					mag += math.Abs(base[i] * probes[q][i])
				}
				if math.Abs(diff[q]-ws) > 1e-12*(1+mag) || math.Abs(floor[q]-wf) > 1e-12*(1+wf) {
					t.Errorf("special %#x n=%d probe %d: %v, %v; portable %v, %v", special, n, q, diff[q], floor[q], ws, wf)
				}
			}
		}
	}
}

// TestCountNonFinite checks the word-at-a-time count against decoding,
// on random bit patterns of every length around a word.
func TestCountNonFinite(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	for _, d := range []safetensors.DType{safetensors.BF16, safetensors.F16, safetensors.F32} {
		w := d.Bits() / 8
		for _, n := range []int{0, 1, 3, 4, 5, 9, 1001} {
			b := make([]byte, n*w)
			for i := range b {
				b[i] = byte(rng.Uint32())
			}
			vals := make([]float64, n)
			quant.DecodeFloat64(d, b, vals)
			want := uint64(0)
			for _, v := range vals {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					want++
				}
			}
			if got, ok := countNonFinite(d, b); !ok || got != want {
				t.Errorf("%s n=%d: %d, %v; want %d", d, n, got, ok, want)
			}
		}
	}
	if _, ok := countNonFinite(safetensors.F64, nil); ok {
		t.Error("F64: ok")
	}
}
