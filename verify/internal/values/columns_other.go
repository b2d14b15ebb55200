//go:build !amd64 || purego

package values

// Without vector loops addColumns adds a column at a time, and
// rowSums.addValues a row.
func columnLoop() func(pp, ee, pe, pv, ev *float64, n int) { return nil }

func rowLoop() func(pp, ee, pe, pv, ev, w *float64, cols, n int) { return nil }
