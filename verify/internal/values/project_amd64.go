//go:build !purego

package values

// dot2 is Σ a·x and Σ h·ax over len(a) elements; the AVX2 loop takes the
// multiples of 8, dot2Go the rest.
func dot2(a, x, h, ax []float64) (s, f float64) {
	n := len(a)
	x, h, ax = x[:n], h[:n], ax[:n]
	v := n &^ 7
	if !cpuAVX2 || v == 0 {
		return dot2Go(a, x, h, ax)
	}
	var out [2]float64
	dot2AVX2(&a[0], &x[0], &h[0], &ax[0], v, &out)
	ts, tf := dot2Go(a[v:], x[v:], h[v:], ax[v:])
	return out[0] + ts, out[1] + tf
}

// dot2AVX2 sums n (a multiple of 8, not 0) products of each pair into out.
//
//go:noescape
func dot2AVX2(a, x, h, ax *float64, n int, out *[2]float64)
