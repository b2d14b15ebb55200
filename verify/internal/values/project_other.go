//go:build !amd64 || purego

package values

func dot2(a, x, h, ax []float64) (s, f float64) { return dot2Go(a, x, h, ax) }
