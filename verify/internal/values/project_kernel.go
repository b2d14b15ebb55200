package values

import (
	"math"

	"github.com/ckptcheck/ckptcheck/safetensors"
)

// The projection's inner loops. For the common case, a BF16 pair on three
// probes, one AVX2 pass a row does everything (projectBF16x3). Otherwise a
// row is turned once into the delta
// M − B with the half-ULP of each merged element beside it (on amd64 one
// AVX2 pass over the bytes for BF16 pairs, deltaBF16; else quant's decode
// and deltaRowFast), and then the probes cost one pass over that row for
// every three of them (dot2s): float64 products and sums, several
// accumulators a sum, no per-element calls or tables.
//
// The probes stay Gaussian. Rademacher (±1) probes would make the floor
// the same for every probe (Σ½ulp), but their detection bound is weaker
// where it matters: a residual row with two equal wrong elements projects
// to exactly 0 on half the ±1 vectors, where a Gaussian projection of it
// is N(0, 2e²) and lands inside the floor only when e is near it.

// halfULPBits computes half an ULP of a merged dtype from a float64's bits
// with no table: see halfULPTable. ok is false for dtypes it does not know
// (F64, whose half-ULPs are float64 subnormals), which use the table.
type halfULPBits struct {
	minField, precision uint64 // the lowest float64 exponent field d's spacing follows; d's precision
}

func newHalfULPBits(d safetensors.DType) (h halfULPBits, ok bool) {
	switch d {
	case safetensors.BF16:
		return halfULPBits{minField: 1023 - 126, precision: 8}, true
	case safetensors.F16:
		return halfULPBits{minField: 1023 - 14, precision: 11}, true
	case safetensors.F32:
		return halfULPBits{minField: 1023 - 126, precision: 24}, true
	}
	return halfULPBits{}, false
}

// deltaRow overwrites base with merged − base (0 where merged is not
// finite) and fills half with ½ulp of each merged element (+Inf where it is
// not finite). It returns how many elements differ (NaN = NaN, −0 = 0) and
// how many merged ones are NaN or Inf.
func deltaRow(merged, base, half []float64, h halfULPBits, table *[2048]float64, useBits bool) (differs, nonfinite uint64) {
	base, half = base[:len(merged)], half[:len(merged)]
	inf := math.Inf(1)
	for c, m := range merged {
		b := base[c]
		d := m - b
		if d != 0 && !(m != m && b != b) {
			differs++
		}
		field := math.Float64bits(m) >> 52 & 0x7ff
		if field == 0x7ff {
			nonfinite++
			base[c], half[c] = 0, inf
			continue
		}
		base[c] = d
		if useBits {
			half[c] = math.Float64frombits((max(field, h.minField) - h.precision) << 52)
		} else {
			half[c] = table[field]
		}
	}
	return differs, nonfinite
}

// dot2Go is the portable dot2: Σ a·x and Σ h·ax over len(a) elements.
func dot2Go(a, x, h, ax []float64) (s, f float64) {
	n := len(a)
	x, h, ax = x[:n], h[:n], ax[:n]
	var s0, s1, s2, s3, f0, f1, f2, f3 float64
	i := 0
	for ; i+4 <= n; i += 4 {
		s0 += a[i] * x[i]
		s1 += a[i+1] * x[i+1]
		s2 += a[i+2] * x[i+2]
		s3 += a[i+3] * x[i+3]
		f0 += h[i] * ax[i]
		f1 += h[i+1] * ax[i+1]
		f2 += h[i+2] * ax[i+2]
		f3 += h[i+3] * ax[i+3]
	}
	for ; i < n; i++ {
		s0 += a[i] * x[i]
		f0 += h[i] * ax[i]
	}
	return (s0 + s1) + (s2 + s3), (f0 + f1) + (f2 + f3)
}
