package values

// Rows: statistics per row, for a scale folded into a weight's output rows
// as well as its input columns (AutoAWQ's scale_fc_fc divides the rows of
// the Linear before another by the scales it multiplies the other's
// columns by, so up_proj = diag(1/s₂)·W·diag(s₁)). With the column factors
// known (from the norm before the weight), one pass fits the row factors:
// a pair that sets Columns and RowWeights w gets, for every row i of every
// matrix, Σ (w_j·p)², Σ e² and Σ w_j·p·e over the row's finite pairs. A
// block's rows are summed on their own and merged in block order with the
// columns, so the sums do not depend on the workers' schedule, and the
// rows kept grow with the elements read, not with a shape.

// RowStats are a pair's sums per row (see Pair.RowWeights): row i is row
// i mod rows of matrix i / rows; PP[i] is Σ_j (w_j·p_ij)², EE[i] Σ_j e_ij²
// and PE[i] Σ_j w_j·p_ij·e_ij over the finite pairs of the row.
type RowStats struct {
	PP, EE, PE []float64
}

// rowSums are a block's rows, from row first on, or a pair's (first 0).
type rowSums struct {
	first      uint64
	pp, ee, pe []float64
}

// rowsWanted reports a pair that asked for its rows with one weight per
// column.
func (p *Pair) rowsWanted() bool {
	return p.Columns && p.RowWeights != nil && uint64(len(p.RowWeights)) == p.columnCount()
}

// newRowSums are the empty rows of a block of n > 0 elements from start
// of a tensor of cols columns.
func newRowSums(start, n, cols uint64) *rowSums {
	var r *rowSums
	return r.reset(start, n, cols)
}

// reset makes r the empty rows of a block of n > 0 elements from start of
// a tensor of cols columns, in r's memory where it has room (r may be
// nil).
func (r *rowSums) reset(start, n, cols uint64) *rowSums {
	first, last := start/cols, (start+n-1)/cols
	rows := last - first + 1
	if r == nil || uint64(cap(r.pp)) < rows {
		return &rowSums{first: first, pp: make([]float64, rows), ee: make([]float64, rows), pe: make([]float64, rows)}
	}
	r.first, r.pp, r.ee, r.pe = first, r.pp[:rows], r.ee[:rows], r.pe[:rows]
	clear(r.pp)
	clear(r.ee)
	clear(r.pe)
	return r
}

// addValues adds decoded values pv and ev of the block's elements from
// start (of a tensor of cols columns) to its rows, the published side
// weighted by w per column: a row's run at a time, or four whole rows at
// a time where the CPU has a vector loop (their columns but the last
// cols mod 4, then those). Each row's sums are chains of additions in its
// elements' order.
func (r *rowSums) addValues(w []float64, start, cols uint64, pv, ev []float64) {
	n := uint64(len(pv))
	loop := rowLoop()
	for i, col, row := uint64(0), start%cols, start/cols-r.first; i < n; col = 0 {
		if c4 := cols &^ 3; loop != nil && col == 0 && c4 > 0 && n-i >= 4*cols {
			loop(&r.pp[row], &r.ee[row], &r.pe[row], &pv[i], &ev[i], &w[0], int(cols), int(c4))
			for k := range uint64(4) {
				at := i + k*cols
				r.addRow(row+k, w[c4:cols], pv[at+c4:at+cols], ev[at+c4:at+cols])
			}
			i, row = i+4*cols, row+4
			continue
		}
		m := min(cols-col, n-i)
		r.addRow(row, w[col:col+m], pv[i:i+m], ev[i:i+m])
		i, row = i+m, row+1
	}
}

// addRow adds a run of row's values pv and ev, weighted by ws, to its
// sums, held in registers meanwhile.
func (r *rowSums) addRow(row uint64, ws, pv, ev []float64) {
	pp, ee, pe := r.pp[row], r.ee[row], r.pe[row]
	ws, ev = ws[:len(pv)], ev[:len(pv)]
	for j, a := range pv {
		if b := ev[j]; finitePair(a, b) {
			a *= ws[j]
			pp += a * a
			ee += b * b
			pe += a * b
		}
	}
	r.pp[row], r.ee[row], r.pe[row] = pp, ee, pe
}

// add adds block o's rows to the pair's: o starts in the pair's last row
// or after it, as blocks merged in order do.
func (s *rowSums) add(o *rowSums) {
	for uint64(len(s.pp)) < o.first {
		s.pp, s.ee, s.pe = append(s.pp, 0), append(s.ee, 0), append(s.pe, 0)
	}
	for i := range o.pp {
		k := o.first + uint64(i)
		if k == uint64(len(s.pp)) {
			s.pp, s.ee, s.pe = append(s.pp, 0), append(s.ee, 0), append(s.pe, 0)
		}
		s.pp[k] += o.pp[i]
		s.ee[k] += o.ee[i]
		s.pe[k] += o.pe[i]
	}
}
