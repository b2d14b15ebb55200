//go:build !amd64 || purego

package values

func dot2(a, x, h, ax []float64) (s, f float64) { return dot2Go(a, x, h, ax) }

func deltaRowFast(merged, base, half []float64, h halfULPBits, table *[2048]float64, useBits bool) (differs, nonfinite uint64) {
	return deltaRow(merged, base, half, h, table, useBits)
}

func deltaBF16(mb, bb []byte, delta, half []float64, h halfULPBits, table *[2048]float64) (differs, nonfinite uint64, ok bool) {
	return 0, 0, false
}

func dot2s(a, h []float64, probes, absProbes [][]float64, diff, floor []float64) {
	for t := range probes {
		diff[t], floor[t] = dot2Go(a, probes[t], h, absProbes[t])
	}
}

func projectBF16x3(mb, bb []byte, probes, absProbes, scaledAbs [][]float64, h halfULPBits, table *[2048]float64,
	diff, floor []float64, tail *projectScratch) (differs, nonfinite uint64, ok bool) {
	return 0, 0, false
}
