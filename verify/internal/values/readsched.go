package values

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"unsafe"
)

// The read scheduler is the one place that reads tensor bytes. Work comes
// as jobs, each saying how to fill one buffer per side: byte spans of the
// readers, read in order into the buffer, and optionally a tile to
// transpose in memory after the read. Readers fill buffers ahead of
// the workers, with a bounded number of reads in flight and a bounded pool
// of buffers; workers consume filled jobs.

// A span is bytes [off, off+n) of the reader file.
type span struct {
	file int
	off  int64
	n    int64
}

// A tile is a rows × cols matrix of elem-byte elements that becomes its
// transpose, cols × rows, after it is read.
type tile struct {
	rows, cols, elem int
}

// A fill says how to fill one side's buffer.
type fill struct {
	spans     []span
	size      int   // bytes in all
	transpose *tile // nil: the spans are the elements in order
	// parts, for a codec side, is the bytes of each of the codec's parts,
	// which the spans hold one after the other.
	parts []int
}

// A job is one block of work: a buffer per side to fill, and what the
// worker needs to consume it.
type job struct {
	fills [2]fill
	pair  *Pair
	block int
	start uint64 // first element
	n     uint64 // elements
	err   error  // the block could not be planned: the reader reports it
}

// maxGap is the largest gap between two spans of one file that a reader
// reads through rather than issuing a second read: a transposed slice of a
// fused tensor reads rows with gaps of a few KiB.
const maxGap = 64 << 10

// schedulerOptions bound the scheduler's concurrency and memory.
type schedulerOptions struct {
	workers   int // goroutines consuming filled jobs
	readAhead int // jobs being read at once, ahead of the workers
}

// A bufPair is the two buffers of a job.
type bufPair struct {
	b       [2][]byte
	scratch []byte  // a tile before its transpose
	gap     []byte  // a run read through its gaps
	chains  []chain // runs of spans read out of order (readUnordered)
	chainOf []uint8 // the chain of each span
}

// schedule reads every job next yields and passes it to consume, filled.
// Jobs are consumed in any order; consume must be safe for concurrent use
// (it receives the worker's index, for per-worker state). The first error
// stops everything.
func schedule(ctx context.Context, files []io.ReaderAt, opt schedulerOptions, next func() (*job, bool), consume func(worker int, j *job, p, e []byte) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	workers, readers := max(opt.workers, 1), max(opt.readAhead, 1)
	pool := make(chan *bufPair, workers+readers)
	for range workers + readers {
		pool <- &bufPair{}
	}
	todo := make(chan *job)
	type filled struct {
		j *job
		b *bufPair
	}
	ready := make(chan filled, readers)
	var wg sync.WaitGroup
	// The planner: jobs in order.
	wg.Go(func() {
		defer close(todo)
		for {
			j, ok := next()
			if !ok {
				return
			}
			select {
			case todo <- j:
			case <-ctx.Done():
				return
			}
		}
	})
	var readWG sync.WaitGroup
	for range readers {
		readWG.Go(func() {
			for j := range todo {
				var b *bufPair
				select {
				case b = <-pool:
				case <-ctx.Done():
					return
				}
				if err := b.read(files, j); err != nil {
					if j.pair != nil && j.pair.Name != "" {
						err = fmt.Errorf("tensor %q: %w", j.pair.Name, err)
					}
					cancel(err)
					return
				}
				select {
				case ready <- filled{j, b}:
				case <-ctx.Done():
					return
				}
			}
		})
	}
	go func() { readWG.Wait(); close(ready) }()
	for w := range workers {
		wg.Go(func() {
			for f := range ready {
				if ctx.Err() != nil {
					continue // drain, so the readers can finish
				}
				if err := consume(w, f.j, f.b.b[0][:f.j.fills[0].size], f.b.b[1][:f.j.fills[1].size]); err != nil {
					cancel(err)
				}
				pool <- f.b
			}
		})
	}
	wg.Wait()
	readWG.Wait()
	if err := context.Cause(ctx); err != nil && err != context.Canceled {
		return err
	}
	return ctx.Err()
}

// read fills both buffers of j.
func (b *bufPair) read(files []io.ReaderAt, j *job) error {
	if j.err != nil {
		return j.err
	}
	for side := range 2 {
		f := &j.fills[side]
		b.b[side] = grow(b.b[side], f.size)
		dst := b.b[side][:f.size]
		if f.transpose != nil {
			b.scratch = grow(b.scratch, f.size)
			if err := b.readSpans(files, f.spans, b.scratch[:f.size]); err != nil {
				return err
			}
			transpose(dst, b.scratch[:f.size], f.transpose)
			continue
		}
		if err := b.readSpans(files, f.spans, dst); err != nil {
			return err
		}
	}
	return nil
}

// readSpans reads spans in order into dst, one read per run of spans that
// are adjacent (or separated by small gaps) in one file. Spans that make
// many more runs in their order than out of it (an interleave's ways
// taken in turn) are read a run at a time instead (readUnordered).
func (b *bufPair) readSpans(files []io.ReaderAt, spans []span, dst []byte) error {
	if runs := runsOf(len(spans), func(i int) span { return spans[i] }); runs > minUnorderedRuns {
		if done, err := b.readUnordered(files, spans, dst, runs); done || err != nil {
			return err
		}
	}
	for i := 0; i < len(spans); {
		// Extend the run while the next span continues the file closely.
		j, gaps := i+1, false
		end := spans[i].off + spans[i].n
		for j < len(spans) && continues(spans[j], spans[i], end) {
			gaps = gaps || spans[j].off != end
			end = spans[j].off + spans[j].n
			j++
		}
		run := spans[i:j]
		total := int64(0)
		for _, s := range run {
			total += s.n
		}
		r := files[spans[i].file]
		if !gaps {
			if err := readAt(r, dst[:total], spans[i].off); err != nil {
				return err
			}
		} else {
			// Read through the gaps into the scratch, then keep the spans.
			b.gap = grow(b.gap, int(end-spans[i].off))
			tmp := b.gap
			if err := readAt(r, tmp, spans[i].off); err != nil {
				return err
			}
			at := int64(0)
			for _, s := range run {
				copy(dst[at:at+s.n], tmp[s.off-spans[i].off:])
				at += s.n
			}
		}
		dst = dst[total:]
		i = j
	}
	return nil
}

// continues reports whether s may join the run that first began and that
// ends at end: the same file, ahead by at most maxGap, the run at most
// 8 MiB.
func continues(s, first span, end int64) bool {
	return s.file == first.file && s.off >= end && s.off-end <= maxGap && s.off+s.n-first.off <= 8<<20
}

// runsOf is how many reads n spans make in the order at gives them.
func runsOf(n int, at func(int) span) int {
	runs := 0
	for i := 0; i < n; runs++ {
		first := at(i)
		end := first.off + first.n
		for i++; i < n && continues(at(i), first, end); i++ {
			end = at(i).off + at(i).n
		}
	}
	return runs
}

// minUnorderedRuns is how many runs spans make before readSpans looks for
// fewer in file order: most blocks are a run or a few.
const minUnorderedRuns = 8

// maxChains bounds the runs readUnordered gathers spans into.
const maxChains = 16

// A chain is a run of spans that readUnordered reads at once: the spans
// that continue it, in their order, wherever they come in the block.
type chain struct {
	first span
	end   int64
}

// readUnordered reads spans that come from a few runs taken in turn (an
// interleave's ways): each span joins the first run it continues, a read
// a run, and is copied into its place in dst. It does nothing (done
// false) when the spans need more than maxChains runs, or more than half
// the runs of their own order.
func (b *bufPair) readUnordered(files []io.ReaderAt, spans []span, dst []byte, runs int) (done bool, err error) {
	chains := b.chains[:0]
	of := b.chainOf[:0]
	for _, s := range spans {
		k := slices.IndexFunc(chains, func(c chain) bool { return continues(s, c.first, c.end) })
		if k < 0 {
			if len(chains) == maxChains || 2*(len(chains)+1) > runs {
				return false, nil
			}
			chains, k = append(chains, chain{first: s}), len(chains)
		}
		chains[k].end = s.off + s.n
		of = append(of, uint8(k))
	}
	b.chains, b.chainOf = chains, of
	for k, c := range chains {
		b.gap = grow(b.gap, int(c.end-c.first.off))
		if err := readAt(files[c.first.file], b.gap, c.first.off); err != nil {
			return true, err
		}
		at := int64(0)
		for i, s := range spans {
			if int(of[i]) == k {
				copy(dst[at:at+s.n], b.gap[s.off-c.first.off:])
			}
			at += s.n
		}
	}
	return true, nil
}

// readAt reads len(p) bytes at off; io.ReaderAt may report io.EOF with a
// full read at the end of the input.
func readAt(r io.ReaderAt, p []byte, off int64) error {
	if len(p) == 0 {
		return nil
	}
	n, err := r.ReadAt(p, off)
	if n == len(p) {
		return nil
	}
	if err != nil && err != io.EOF {
		return err // the file's own error names its path and the file offset
	}
	return fmt.Errorf("reading %d bytes at data offset %d: %w", len(p), off, io.ErrUnexpectedEOF)
}

func grow(b []byte, n int) []byte {
	if cap(b) < n {
		return make([]byte, n)
	}
	return b[:n]
}

// transpose writes src, t.rows × t.cols elements, as its transpose into dst,
// in cache-sized blocks; elements of 2 and 4 bytes move as words when the
// buffers are aligned for them (they are: the scheduler allocates them).
func transpose(dst, src []byte, t *tile) {
	n := t.rows * t.cols
	switch {
	case n == 0:
	case t.elem == 2 && aligned(dst, 2) && aligned(src, 2):
		transposeOf(words[uint16](dst, n), words[uint16](src, n), t.rows, t.cols)
	case t.elem == 4 && aligned(dst, 4) && aligned(src, 4):
		transposeOf(words[uint32](dst, n), words[uint32](src, n), t.rows, t.cols)
	case t.elem == 8 && aligned(dst, 8) && aligned(src, 8):
		transposeOf(words[uint64](dst, n), words[uint64](src, n), t.rows, t.cols)
	default:
		transposeBytes(dst, src, t.rows, t.cols, t.elem)
	}
}

// words views the first n elements of b as W: an element's bytes as one
// word, in the machine's order, which a move does not care about.
func words[W uint16 | uint32 | uint64](b []byte, n int) []W {
	var w W
	_ = b[n*int(unsafe.Sizeof(w))-1]
	return unsafe.Slice((*W)(unsafe.Pointer(unsafe.SliceData(b))), n)
}

// The transposes walk tiles of transposeRows source rows by
// transposeCols columns. Rows of a power-of-two length (most weights) lie
// a multiple of 4 KiB apart and so share one set of the first-level
// cache: a tile reads no more rows at once than the cache has ways.
const (
	transposeRows = 8
	transposeCols = 256
)

func transposeOf[W uint16 | uint32 | uint64](dst, src []W, rows, cols int) {
	for c0 := 0; c0 < cols; c0 += transposeCols {
		c1 := min(c0+transposeCols, cols)
		for r0 := 0; r0 < rows; r0 += transposeRows {
			r1 := min(r0+transposeRows, rows)
			if r1-r0 == transposeRows {
				// The common case, unrolled: eight loads of one column.
				s0, s1, s2, s3 := src[r0*cols:], src[(r0+1)*cols:], src[(r0+2)*cols:], src[(r0+3)*cols:]
				s4, s5, s6, s7 := src[(r0+4)*cols:], src[(r0+5)*cols:], src[(r0+6)*cols:], src[(r0+7)*cols:]
				for c := c0; c < c1; c++ {
					out := dst[c*rows+r0 : c*rows+r0+transposeRows]
					out[0], out[1], out[2], out[3] = s0[c], s1[c], s2[c], s3[c]
					out[4], out[5], out[6], out[7] = s4[c], s5[c], s6[c], s7[c]
				}
				continue
			}
			for c := c0; c < c1; c++ {
				out := dst[c*rows+r0 : c*rows+r1]
				for i := range out {
					out[i] = src[(r0+i)*cols+c]
				}
			}
		}
	}
}

func transposeBytes(dst, src []byte, rows, cols, e int) {
	for r0 := 0; r0 < rows; r0 += transposeRows {
		r1 := min(r0+transposeRows, rows)
		for c0 := 0; c0 < cols; c0 += transposeCols {
			c1 := min(c0+transposeCols, cols)
			for r := r0; r < r1; r++ {
				for c := c0; c < c1; c++ {
					copy(dst[(c*rows+r)*e:(c*rows+r+1)*e], src[(r*cols+c)*e:])
				}
			}
		}
	}
}
