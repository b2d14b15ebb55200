package values

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/bits"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/ckptcheck/ckptcheck/quant"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// A Projection is one tensor of a merge check (Freivalds' test): the
// merged tensor M against the base B, two plain float operands of one
// shape read as rows (all dimensions but the last) of cols elements, and k
// probe vectors x_t of cols values each. Project fills, for row i and probe
// t, at [i·k+t]:
//
//	Diff  = Σ_j (M_ij − B_ij)·x_tj
//	Floor = Σ_j ½ulp(M_ij)·|x_tj|
//
// in float64, in the one pass that reads the bytes: O(rows·cols·k) work,
// never forming a matrix. Floor bounds what rounding M to its dtype can
// move Diff by. With no probes it only counts the elements that differ.
type Projection struct {
	Base, Merged Operand
	Probes       [][]float64
	Diff, Floor  []float64
	// Rows, when set, takes the probes' place for a check that needs whole
	// rows (DoRA's row norms): it is called with each row of the base and
	// of the merge decoded to float64, once a row, from several workers at
	// once. The slices are the worker's and are reused when it returns.
	Rows func(row uint64, base, merged []float64)
	// Differs counts elements whose values differ (−0 = 0, NaN = NaN);
	// NonFinite the merged elements that are NaN or Inf.
	Differs, NonFinite uint64

	pair               Pair // the blocking and jobs the scheduler reads
	cols               uint64
	absProbes          [][]float64
	scaledAbs          [][]float64 // |x|·2^-8: ½ulp of a BF16 M is its power of two times 2^-8
	differs, nonfinite atomic.Uint64
}

// Project runs every projection, reading the operands' bytes from readers
// through the read scheduler on all cores, like Run. It returns the bytes
// read.
func Project(ctx context.Context, readers []io.ReaderAt, projs []*Projection, opt Options) (int64, error) {
	workers := opt.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	readAhead := opt.ReadAhead
	if readAhead <= 0 {
		readAhead = 4
	}
	byPair := make(map[*Pair]*Projection, len(projs))
	var total, read, done atomic.Int64
	for i, p := range projs {
		if err := p.prepare(); err != nil {
			return 0, fmt.Errorf("projection %d: %w", i, err)
		}
		byPair[&p.pair] = p
		total.Add(int64(p.Base.Size() + p.Merged.Size()))
	}
	scratch := make([]projectScratch, workers)
	pi, k := 0, uint64(0)
	next := func() (*job, bool) {
		for pi < len(projs) && k >= projs[pi].pair.blocks.blocks {
			pi, k = pi+1, 0
		}
		if pi == len(projs) {
			return nil, false
		}
		p := &projs[pi].pair
		j := p.blocks.job(p, k)
		k++
		return j, true
	}
	consume := func(w int, j *job, bb, mb []byte) error {
		p := byPair[j.pair]
		raw := int64(len(bb) + len(mb))
		read.Add(raw)
		p.block(&scratch[w], j, bb, mb)
		if opt.Progress != nil {
			opt.Progress(done.Add(raw), total.Load())
		}
		return nil
	}
	err := schedule(ctx, readers, schedulerOptions{workers: workers, readAhead: readAhead}, next, consume)
	for _, p := range projs {
		p.Differs, p.NonFinite = p.differs.Load(), p.nonfinite.Load()
	}
	return read.Load(), err
}

// prepare checks the operands and cuts the projection into blocks of whole
// rows, so that no two blocks share a row's sums.
func (p *Projection) prepare() error {
	for _, o := range []*Operand{&p.Base, &p.Merged} {
		if o.Codec != nil || !o.DType.IsFloat() || o.DType.Lanes() != 1 || o.DType.Bits() < 16 {
			return fmt.Errorf("a projection reads plain float tensors of 16 bits or more, not %s", o.DType)
		}
	}
	if !shapeEqual(p.Base.Shape, p.Merged.Shape) {
		return fmt.Errorf("shapes %v and %v differ", p.Base.Shape, p.Merged.Shape)
	}
	p.pair = Pair{Published: p.Base, Exported: p.Merged}
	for _, o := range []*Operand{&p.pair.Published, &p.pair.Exported} {
		if err := o.prepareInterleave(); err != nil { // interleave.go
			return err
		}
	}
	if err := p.pair.prepareTiled(); err != nil { // segtiles.go
		return err
	}
	n := p.Base.Elements()
	p.cols = 1
	if len(p.Base.Shape) > 0 {
		p.cols = p.Base.Shape[len(p.Base.Shape)-1]
	}
	rows := uint64(0)
	if p.cols > 0 {
		rows = n / p.cols
	}
	if p.Rows != nil && len(p.Probes) > 0 {
		return fmt.Errorf("a projection has probes or a row check, not both")
	}
	for _, x := range p.Probes {
		if uint64(len(x)) != p.cols {
			return fmt.Errorf("a probe of %d values for rows of %d", len(x), p.cols)
		}
	}
	p.absProbes = make([][]float64, len(p.Probes))
	if p.Merged.DType == safetensors.BF16 {
		p.scaledAbs = make([][]float64, len(p.Probes))
	}
	for t, x := range p.Probes {
		p.absProbes[t] = make([]float64, len(x))
		for j, v := range x {
			p.absProbes[t][j] = math.Abs(v)
		}
		if p.scaledAbs != nil {
			p.scaledAbs[t] = make([]float64, len(x))
			for j, v := range x {
				p.scaledAbs[t][j] = math.Ldexp(math.Abs(v), -8) // exact: a power of two
			}
		}
	}
	k := uint64(len(p.Probes))
	p.Diff, p.Floor = make([]float64, rows*k), make([]float64, rows*k)
	if p.Base.Transposed || p.Merged.Transposed || p.Base.tiled() || p.Merged.tiled() {
		p.pair.blocks = newBlocking(&p.pair)
		return nil
	}
	b := blocking{n: n, rows: rows, cols: p.cols, byRows: true}
	if n > 0 {
		b.perRows = max(1, blockElems/p.cols)
		b.perMat = (rows + b.perRows - 1) / b.perRows
		b.blocks = b.perMat
	}
	p.pair.blocks = b
	return nil
}

func shapeEqual(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// projectScratch is a worker's decoded rows.
type projectScratch struct {
	base, merged, half []float64
	tail               *projectScratch // projectBF16x3's last elements
}

// block projects the whole rows of one block (see project_kernel.go).
func (p *Projection) block(s *projectScratch, j *job, bb, mb []byte) {
	cols := int(p.cols)
	if cols == 0 {
		return
	}
	bd, md := p.Base.DType, p.Merged.DType
	if p.Rows != nil {
		p.rows(s, j, bb, mb)
		return
	}
	if len(p.Probes) == 0 && bd == md && bytes.Equal(bb, mb) {
		// A tensor the merge must leave alone, left alone: nothing differs,
		// and only the merged NaNs and Infs are left to count.
		if nf, ok := countNonFinite(md, mb); ok {
			p.nonfinite.Add(nf)
			return
		}
	}
	be, me := bd.Bits()/8, md.Bits()/8
	s.base, s.merged = growFloats(s.base, cols), growFloats(s.merged, cols)
	s.half = growFloats(s.half, cols)
	bits, useBits := newHalfULPBits(md)
	table := halfULPTable(md)
	k := len(p.Probes)
	var differs, nonfinite uint64
	for r := range int(j.n) / cols {
		row := int(j.start)/cols + r
		brow, mrow := bb[r*cols*be:(r+1)*cols*be], mb[r*cols*me:(r+1)*cols*me]
		diff, floor := p.Diff[row*k:(row+1)*k], p.Floor[row*k:(row+1)*k]
		bf16 := bd == safetensors.BF16 && md == safetensors.BF16
		if bf16 && k == 3 {
			if s.tail == nil {
				s.tail = &projectScratch{}
			}
			if d, nf, ok := projectBF16x3(mrow, brow, p.Probes, p.absProbes, p.scaledAbs, bits, table, diff, floor, s.tail); ok {
				differs, nonfinite = differs+d, nonfinite+nf
				continue
			}
		}
		var d, nf uint64
		fused := false
		if bf16 {
			d, nf, fused = deltaBF16(mrow, brow, s.base, s.half, bits, table)
		}
		if !fused {
			quant.DecodeFloat64(bd, brow, s.base)
			quant.DecodeFloat64(md, mrow, s.merged)
			d, nf = deltaRowFast(s.merged, s.base, s.half, bits, table, useBits)
		}
		differs, nonfinite = differs+d, nonfinite+nf
		dot2s(s.base, s.half, p.Probes, p.absProbes, diff, floor)
	}
	p.differs.Add(differs)
	p.nonfinite.Add(nonfinite)
}

// rows decodes the whole rows of one block for p.Rows, counting the
// elements that differ and the merged ones that are not finite.
func (p *Projection) rows(s *projectScratch, j *job, bb, mb []byte) {
	cols := int(p.cols)
	be, me := p.Base.DType.Bits()/8, p.Merged.DType.Bits()/8
	s.base, s.merged = growFloats(s.base, cols), growFloats(s.merged, cols)
	var differs, nonfinite uint64
	for r := range int(j.n) / cols {
		row := uint64(int(j.start)/cols + r)
		quant.DecodeFloat64(p.Base.DType, bb[r*cols*be:(r+1)*cols*be], s.base)
		quant.DecodeFloat64(p.Merged.DType, mb[r*cols*me:(r+1)*cols*me], s.merged)
		for c, m := range s.merged {
			b := s.base[c]
			if m != b && !(m != m && b != b) {
				differs++
			}
			if m-m != 0 {
				nonfinite++
			}
		}
		p.Rows(row, s.base, s.merged)
	}
	p.differs.Add(differs)
	p.nonfinite.Add(nonfinite)
}

func growFloats(b []float64, n int) []float64 {
	if cap(b) < n {
		return make([]float64, n)
	}
	return b[:n]
}

// HalfULP is half the spacing of dtype d's values at v: the most rounding
// a real number to d moves it, for |v| in d's range. It is +Inf for a
// non-finite v.
func HalfULP(d safetensors.DType, v float64) float64 {
	return halfULPTable(d)[(math.Float64bits(v)>>52)&0x7ff]
}

var halfULPTables sync.Map // safetensors.DType → *[2048]float64

// halfULPTable gives half an ULP of d by float64 exponent field: a value
// of d with precision p bits (the implicit one included) whose float64
// exponent is e has spacing 2^(e−p+1), never finer than d's subnormals.
func halfULPTable(d safetensors.DType) *[2048]float64 {
	if t, ok := halfULPTables.Load(d); ok {
		return t.(*[2048]float64)
	}
	p, minExp := 53, -1022
	switch d {
	case safetensors.BF16:
		p, minExp = 8, -126
	case safetensors.F16:
		p, minExp = 11, -14
	case safetensors.F32:
		p, minExp = 24, -126
	}
	t := new([2048]float64)
	for e := range 2048 {
		exp := max(e-1023, minExp)
		t[e] = math.Ldexp(1, exp-p) // half of 2^(exp−p+1)
	}
	t[2047] = math.Inf(1)
	halfULPTables.Store(d, t)
	return t
}

// countNonFinite counts the NaNs and Infs among little-endian BF16, F16
// or F32 values, several a word: an exponent field e of all ones is the
// one for which e + 1 carries into the bit above the field. ok is false
// for other dtypes.
func countNonFinite(d safetensors.DType, b []byte) (n uint64, ok bool) {
	var field, one, top uint64
	width := 2
	switch d {
	case safetensors.BF16:
		field, one = 0x7f80_7f80_7f80_7f80, 0x0080_0080_0080_0080
	case safetensors.F16:
		field, one = 0x7c00_7c00_7c00_7c00, 0x0400_0400_0400_0400
	case safetensors.F32:
		field, one, width = 0x7f80_0000_7f80_0000, 0x0080_0000_0080_0000, 4
	default:
		return 0, false
	}
	top = 0x8000_8000_8000_8000
	if width == 4 {
		top = 0x8000_0000_8000_0000
	}
	i := 0
	for ; i+8 <= len(b); i += 8 {
		w := binary.LittleEndian.Uint64(b[i:])
		n += uint64(bits.OnesCount64((w&field + one) & top))
	}
	if i < len(b) {
		var tail [8]byte
		copy(tail[:], b[i:]) // zeros are finite
		w := binary.LittleEndian.Uint64(tail[:])
		n += uint64(bits.OnesCount64((w&field + one) & top))
	}
	return n, true
}
