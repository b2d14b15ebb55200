package values

import (
	"github.com/ckptcheck/ckptcheck/quant"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// Columns: statistics per column of the last dimension, for telling a
// scale folded into a weight's input channels (AWQ, SmoothQuant: W·diag(s),
// and its inverse in the preceding norm) from a wrong weight. A pair that
// sets Columns gets, beside the usual statistics, for every column j over
// every row of every matrix, Σ p², Σ e² and Σ p·e of the finite pairs.
// The engine keeps one partial a block in flight and merges them in block
// order, so the sums do not depend on the workers' schedule.

// ColumnStats are a pair's sums per column (see Pair.Columns): PP[j] is
// Σ p², EE[j] Σ e² and PE[j] Σ p·e over the finite pairs of column j.
type ColumnStats struct {
	PP, EE, PE []float64
}

// columnSums is a block's or a pair's share of ColumnStats, and of
// RowStats when the pair asks for them.
type columnSums struct {
	pp, ee, pe []float64
	rows       *rowSums
}

func newColumnSums(cols uint64) *columnSums {
	return &columnSums{pp: make([]float64, cols), ee: make([]float64, cols), pe: make([]float64, cols)}
}

func (c *columnSums) add(o *columnSums) {
	for j := range c.pp {
		c.pp[j] += o.pp[j]
		c.ee[j] += o.ee[j]
		c.pe[j] += o.pe[j]
	}
	if o.rows != nil {
		if c.rows == nil {
			c.rows = &rowSums{}
		}
		c.rows.add(o.rows)
	}
}

// columnMerge merges a pair's blocks in block order: a block done before
// its predecessors waits in pending. Blocks merged are kept in free for
// the blocks to come (fresh sums of a few tens of kilobytes a block cost
// more in page faults than their sums).
type columnMerge struct {
	cols    uint64
	next    int
	pending map[int]*columnSums
	sum     *columnSums
	free    []*columnSums
}

// columnBuffers are a worker's buffers for the column pass.
type columnBuffers struct {
	vals [2][]float64
}

// columnCount is the pair's column count: the last dimension (1 for a
// scalar).
func (p *Pair) columnCount() uint64 {
	d, _ := matrixDims(p.Published.Shape)
	return max(d.Cols, 1)
}

// measure sums a block's columns: pb and eb are its bytes as the kernels
// see them, of dtypes pd and ed.
func (cb *columnBuffers) measure(j *job, pd, ed safetensors.DType, pb, eb []byte) {
	s := j.pair.blockColumns(j.start, j.n)
	cb.add(s, j.pair, j.start, j.n, pd, ed, pb, eb)
	j.pair.recordColumns(j.block, s)
}

// blockColumns are the empty sums of a block of n elements from start:
// those of a block merged, cleared, where there are.
func (p *Pair) blockColumns(start, n uint64) *columnSums {
	cols := p.columnCount()
	var s *columnSums
	p.mu.Lock()
	if m := p.columns; m != nil && len(m.free) > 0 {
		s = m.free[len(m.free)-1]
		m.free = m.free[:len(m.free)-1]
	}
	p.mu.Unlock()
	if s == nil {
		s = newColumnSums(cols)
	} else {
		clear(s.pp)
		clear(s.ee)
		clear(s.pe)
	}
	rows := s.rows
	s.rows = nil
	if p.rowsWanted() && n > 0 {
		s.rows = rows.reset(start, n, cols)
	}
	return s
}

// add adds n elements from start, bytes pb and eb of dtypes pd and ed, to
// their block's sums s. Each column (and row) sums its elements in order,
// so a block's elements added in order give the same sums in pieces as
// whole.
func (cb *columnBuffers) add(s *columnSums, p *Pair, start, n uint64, pd, ed safetensors.DType, pb, eb []byte) {
	if uint64(cap(cb.vals[0])) < n {
		cb.vals = [2][]float64{make([]float64, n), make([]float64, n)}
	}
	pv, ev := cb.vals[0][:n], cb.vals[1][:n]
	quant.DecodeFloat64(pd, pb, pv)
	quant.DecodeFloat64(ed, eb, ev)
	cols := uint64(len(s.pp))
	// A row's run of columns at a time: no column passes another.
	for i, col := uint64(0), start%cols; i < n; col = 0 {
		m := min(cols-col, n-i)
		addColumns(s.pp[col:col+m], s.ee[col:col+m], s.pe[col:col+m], pv[i:i+m], ev[i:i+m])
		i += m
	}
	if s.rows != nil {
		s.rows.addValues(p.RowWeights, start, cols, pv, ev)
	}
}

// addColumns adds the products of the finite pairs of pv and ev, a column
// each, to their columns' sums pp, ee and pe (four columns at a time where
// the CPU has a vector loop).
func addColumns(pp, ee, pe, pv, ev []float64) {
	ee, pe, pv, ev = ee[:len(pp)], pe[:len(pp)], pv[:len(pp)], ev[:len(pp)]
	if v := len(pp) &^ 3; v > 0 {
		if loop := columnLoop(); loop != nil {
			loop(&pp[0], &ee[0], &pe[0], &pv[0], &ev[0], v)
			pp, ee, pe, pv, ev = pp[v:], ee[v:], pe[v:], pv[v:], ev[v:]
		}
	}
	for j, a := range pv {
		if b := ev[j]; finitePair(a, b) {
			pp[j] += a * a
			ee[j] += b * b
			pe[j] += a * b
		}
	}
}

// finitePair reports a pair of finite values: the only ones summed (x − x
// is 0 for a finite x, NaN for a NaN or an infinity).
func finitePair(a, b float64) bool {
	return a-a == 0 && b-b == 0
}

// recordColumns merges block's sums when every block before it is merged,
// and keeps them until then.
func (p *Pair) recordColumns(block int, s *columnSums) {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := p.columns
	if m == nil {
		m = &columnMerge{cols: p.columnCount(), pending: map[int]*columnSums{}}
		m.sum = newColumnSums(m.cols)
		p.columns = m
	}
	m.pending[block] = s
	for {
		b, ok := m.pending[m.next]
		if !ok {
			return
		}
		delete(m.pending, m.next)
		m.sum.add(b)
		m.free = append(m.free, b)
		m.next++
	}
}

// finishColumns stores the merged sums; called with p.mu held.
func (p *Pair) finishColumns() {
	if !p.Columns {
		return
	}
	if m := p.columns; m != nil {
		p.Stats.Columns = &ColumnStats{PP: m.sum.pp, EE: m.sum.ee, PE: m.sum.pe}
	} else {
		z := newColumnSums(p.columnCount())
		p.Stats.Columns = &ColumnStats{PP: z.pp, EE: z.ee, PE: z.pe}
	}
	if p.rowsWanted() {
		r := &rowSums{}
		if m := p.columns; m != nil && m.sum.rows != nil {
			r = m.sum.rows
		}
		p.Stats.Rows = &RowStats{PP: r.pp, EE: r.ee, PE: r.pe}
	}
	p.columns = nil
}
