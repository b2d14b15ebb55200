//go:build !purego

package values

// columnLoop returns the AVX2 loop of addColumns (columns_amd64.s), or
// nil.
func columnLoop() func(pp, ee, pe, pv, ev *float64, n int) {
	if !cpuAVX2() || kernelChoice != kernelsAuto {
		return nil
	}
	return addColumnsAVX2
}

// rowLoop returns the AVX2 loop of rowSums.addValues, or nil.
func rowLoop() func(pp, ee, pe, pv, ev, w *float64, cols, n int) {
	if !cpuAVX2() || kernelChoice != kernelsAuto {
		return nil
	}
	return addRowsAVX2
}

//go:noescape
func addColumnsAVX2(pp, ee, pe, pv, ev *float64, n int)

// addRowsAVX2 adds the first n columns (a multiple of 4) of four rows
// from pv and ev, cols apart, weighted by w, to the rows' sums pp[:4],
// ee[:4] and pe[:4].
//
//go:noescape
func addRowsAVX2(pp, ee, pe, pv, ev, w *float64, cols, n int)
