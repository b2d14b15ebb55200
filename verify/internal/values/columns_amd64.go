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

//go:noescape
func addColumnsAVX2(pp, ee, pe, pv, ev *float64, n int)
