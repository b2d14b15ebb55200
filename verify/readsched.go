package verify

import (
	"context"
	"fmt"
	"io"
	"sync"
	"unsafe"
)

// The read scheduler is the one place that reads tensor bytes. Work comes
// as jobs, each saying how to fill one buffer per side: byte spans of the
// sources' data sections, read in order into the buffer, and optionally a
// tile to transpose in memory after the read. Readers fill buffers ahead of
// the workers, with a bounded number of reads in flight and a bounded pool
// of buffers; workers consume filled jobs.

// A span is bytes [off, off+n) of the data section of file.
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
}

// A job is one block of work: a buffer per side to fill, and what the
// worker needs to consume it.
type job struct {
	fills [2]fill
	pair  *pair
	block int
	start uint64 // first element
	n     uint64 // elements
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
	scratch []byte // a tile before its transpose
	gap     []byte // a run read through its gaps
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
// are adjacent (or separated by small gaps) in one file.
func (b *bufPair) readSpans(files []io.ReaderAt, spans []span, dst []byte) error {
	for i := 0; i < len(spans); {
		// Extend the run while the next span continues the file closely.
		j, gaps := i+1, false
		end := spans[i].off + spans[i].n
		for j < len(spans) && spans[j].file == spans[i].file && spans[j].off >= end && spans[j].off-end <= maxGap &&
			spans[j].off+spans[j].n-spans[i].off <= 8<<20 {
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
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("reading %d bytes at %d: %w", len(p), off, err)
}

func grow(b []byte, n int) []byte {
	if cap(b) < n {
		return make([]byte, n)
	}
	return b[:n]
}

// transpose writes src, t.rows × t.cols elements, as its transpose into dst,
// in cache-sized blocks, moving whole elements as words where they are
// aligned.
func transpose(dst, src []byte, t *tile) {
	n := t.rows * t.cols
	if n == 0 {
		return
	}
	e := uint64(t.elem)
	if aligned(dst, e) && aligned(src, e) {
		switch t.elem {
		case 1:
			transposeElems(dst[:n], src[:n], t.rows, t.cols)
			return
		case 2:
			transposeElems(words[uint16](dst, n), words[uint16](src, n), t.rows, t.cols)
			return
		case 4:
			transposeElems(words[uint32](dst, n), words[uint32](src, n), t.rows, t.cols)
			return
		case 8:
			transposeElems(words[uint64](dst, n), words[uint64](src, n), t.rows, t.cols)
			return
		}
	}
	const blk = 32
	for r0 := 0; r0 < t.rows; r0 += blk {
		r1 := min(r0+blk, t.rows)
		for c0 := 0; c0 < t.cols; c0 += blk {
			c1 := min(c0+blk, t.cols)
			for r := r0; r < r1; r++ {
				for c := c0; c < c1; c++ {
					copy(dst[(c*t.rows+r)*t.elem:(c*t.rows+r+1)*t.elem], src[(r*t.cols+c)*t.elem:])
				}
			}
		}
	}
}

// words views the first n elements of b, aligned, as words of type W.
func words[W uint16 | uint32 | uint64](b []byte, n int) []W {
	return unsafe.Slice((*W)(unsafe.Pointer(unsafe.SliceData(b))), n)[:n:n]
}

// transposeElems writes src (rows × cols) transposed into dst, in blocks
// of 32 × 32 elements so that both stay in cache.
func transposeElems[W uint8 | uint16 | uint32 | uint64](dst, src []W, rows, cols int) {
	const blk = 32
	for r0 := 0; r0 < rows; r0 += blk {
		r1 := min(r0+blk, rows)
		for c0 := 0; c0 < cols; c0 += blk {
			c1 := min(c0+blk, cols)
			for r := r0; r < r1; r++ {
				row := src[r*cols : r*cols+cols]
				for c := c0; c < c1; c++ {
					dst[c*rows+r] = row[c]
				}
			}
		}
	}
}
