package values

import (
	"bytes"
	"context"
	"io"
	"math"
	"slices"
	"sync"
	"sync/atomic"
)

// The run of a value comparison: every block of every pair through the
// read scheduler and the kernels, then each pair's blocks merged in order.

// run compares every block of every pair. A block whose dtypes allow it is
// first checked exactly without decoding; a tensor whose blocks are all
// exact needs no statistics. A tensor with some blocks exact and others
// not has its exact blocks compared again in full, so that its statistics
// are those of every block.
func run(ctx context.Context, readers []io.ReaderAt, pairs []*Pair, workers, readAhead int, progress func(done, total int64)) (int64, error) {
	var read, done, total atomic.Int64
	for _, p := range pairs {
		p.blocks = newBlocking(p)
		p.remaining.Store(int64(p.blocks.blocks))
		total.Add(int64(p.Published.Size() + p.Exported.Size()))
		if p.blocks.blocks == 0 {
			p.finish()
		}
	}
	kernels := make([]kernel, workers)
	decoders := make([]decoder, workers)
	stepBufs := make([]stepBuffers, workers)
	colBufs := make([]columnBuffers, workers)
	subBufs := make([]subBuffers, workers)
	var fixMu sync.Mutex
	var fixups []*Pair
	consume := func(full bool) func(w int, j *job, pb, eb []byte) error {
		return func(w int, j *job, pb, eb []byte) error {
			p := j.pair
			raw := int64(len(pb) + len(eb))
			read.Add(raw)
			pd, ed := p.Published.DType, p.Exported.DType
			var exact, columns bool // columns: the block's column sums recorded
			var part *partial
			if p.codec {
				// Equal encodings with equal bytes need no decoding; else
				// a codec side is the F32 tensor it decodes to.
				exact = !full && p.fast && bytes.Equal(pb, eb)
				if side := p.subChunkSide(); !exact && subChunking && side >= 0 && j.n > 0 {
					res, err := subBufs[w].run(j, side, &kernels[w], &decoders[w], pb, eb, full)
					if err != nil {
						return err
					}
					columns = true
					if res.hasSteps {
						p.recordSteps(j.block, res.steps)
					}
					if exact = res.exact; !exact {
						part = &res.part
						if !res.rounds {
							p.rounding.Store(false)
						}
					}
				} else if !exact {
					var err error
					if pb, eb, err = decoders[w].decode(j, pb, eb); err != nil {
						return err
					}
					pd, ed = p.Published.kernelDType(), p.Exported.kernelDType()
					if p.stepper != [2]Stepper{} {
						sp, err := stepBufs[w].measure(j, &decoders[w], pb, eb)
						if err != nil {
							return err
						}
						p.recordSteps(j.block, sp)
					}
					exact = !full && fastExact(pd, ed) && exactBlock(pd, ed, pb, eb)
				}
			} else {
				exact = !full && p.fast && exactBlock(pd, ed, pb, eb)
			}
			if p.Columns && !full && !columns {
				colBufs[w].measure(j, pd, ed, pb, eb)
			}
			switch {
			case exact:
				p.record(j.block, nil)
			case part != nil:
				p.record(j.block, part)
			default:
				part := kernels[w].compare(pd, ed, pb, eb, j.start, j.n, p.Tolerance)
				p.record(j.block, &part)
				if p.rounding.Load() && !roundsTo(pd, pb, eb) {
					p.rounding.Store(false)
				}
			}
			if progress != nil {
				progress(done.Add(raw), total.Load())
			}
			if p.remaining.Add(-1) == 0 {
				if full || !p.needsFixup() {
					p.finish()
				} else {
					fixMu.Lock()
					fixups = append(fixups, p)
					fixMu.Unlock()
				}
			}
			return nil
		}
	}
	opt := schedulerOptions{workers: workers, readAhead: tileReadAhead(pairs, readAhead)}
	// Every pair's blocks are planned, in order, as the readers ask.
	pi, k := 0, uint64(0)
	next := func() (*job, bool) {
		for pi < len(pairs) && k >= pairs[pi].blocks.blocks {
			pi, k = pi+1, 0
		}
		if pi == len(pairs) {
			return nil, false
		}
		j := pairs[pi].blocks.job(pairs[pi], k)
		k++
		return j, true
	}
	if err := schedule(ctx, readers, opt, next, consume(false)); err != nil {
		return read.Load(), err
	}
	if len(fixups) == 0 {
		return read.Load(), nil
	}
	// The fix-up pass: exact blocks of mixed tensors, compared in full.
	slices.SortFunc(fixups, func(a, b *Pair) int { return slices.Index(pairs, a) - slices.Index(pairs, b) })
	var jobs []*job
	for _, p := range fixups {
		n := 0
		for b, ex := range p.exact {
			if ex {
				jobs = append(jobs, p.blocks.job(p, uint64(b)))
				total.Add(int64(jobs[len(jobs)-1].fills[0].size + jobs[len(jobs)-1].fills[1].size))
				n++
			}
		}
		p.remaining.Store(int64(n))
	}
	i := 0
	err := schedule(ctx, readers, opt, func() (*job, bool) {
		if i == len(jobs) {
			return nil, false
		}
		i++
		return jobs[i-1], true
	}, consume(true))
	return read.Load(), err
}

// record stores a block's result: its statistics, or nil when the block
// was found exact without them.
func (p *Pair) record(block int, part *partial) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.parts == nil {
		p.parts = make([]partial, p.blocks.blocks)
		p.exact = make([]bool, p.blocks.blocks)
	}
	if part == nil {
		p.exact[block] = true
		return
	}
	p.exact[block] = false
	p.parts[block] = *part
	p.dirty = true
}

// needsFixup reports a tensor with both exact blocks and others.
func (p *Pair) needsFixup() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dirty && slices.Contains(p.exact, true)
}

// finish merges a pair's blocks, in order, into its statistics.
func (p *Pair) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := &p.Stats
	p.finishSteps()
	p.finishColumns()
	s.WithinRounding = p.rounding.Load()
	if !p.dirty {
		// Every block exact: bit-identical, or an exact upcast.
		s.BitIdentical = p.Published.kernelDType() == p.Exported.kernelDType()
		s.RelL2, s.Cosine, s.Constant = 0, 1, true
		p.parts, p.exact = nil, nil
		return
	}
	var t partial
	for _, r := range p.parts {
		t.merge(r)
	}
	p.parts, p.exact = nil, nil
	s.Mismatches = t.mismatches
	s.NonFinite = t.nonfinite
	s.BitIdentical = !t.bitDiff && p.Published.kernelDType() == p.Exported.kernelDType()
	lanes := float64(p.Published.kernelDType().Lanes())
	s.MeanAbsDiff = t.sumAbs / max(float64(t.n)*lanes, 1)
	s.MaxAbsDiff = t.maxAbs
	if t.hasMax {
		s.MaxAt = unravel(t.maxIdx, p.Published.Shape)
		s.PublishedAt, s.ExportedAt = t.maxP, t.maxE
	} else {
		s.PublishedAt, s.ExportedAt = math.NaN(), math.NaN()
	}
	if t.hasNaN {
		s.NonFiniteAt = unravel(t.nanIdx, p.Published.Shape)
	}
	s.RelL2 = math.Sqrt(t.sumD2) / math.Sqrt(t.sumP2)
	if t.sumD2 == 0 {
		s.RelL2 = 0
	}
	s.Cosine = t.sumPE / (math.Sqrt(t.sumP2) * math.Sqrt(t.sumE2))
	s.Constant = !(t.pVaries && t.eVaries)
}

// unravel turns a row-major flat index into coordinates.
func unravel(i uint64, shape []uint64) []uint64 {
	at := make([]uint64, len(shape))
	for d := len(shape) - 1; d >= 0; d-- {
		if shape[d] > 0 {
			at[d] = i % shape[d]
			i /= shape[d]
		}
	}
	return at
}
