package values

import "sort"

// The read planner turns each pair of logical tensors into jobs: blocks of
// blockElems elements (whole rows when a side is transposed or has a codec;
// whole tiles of rows for a codec), each with the byte spans that hold the
// block on either side. Blocks are fixed by the headers alone, so results
// do not depend on scheduling.

// blockElems is how many elements a block holds: the unit of reading and
// of statistics. A variable so that tests can make it small.
var blockElems uint64 = 1 << 18

// tileBytes bounds the tile a transposed side reads for one block. Such a
// block is a band of logical rows, which the stored transpose holds as a
// column band across every stored row: the read runs through the rest of
// each stored row, so the wider the band (up to the whole matrix), the
// more of each byte read is used. A variable so that tests can make it
// small.
var tileBytes uint64 = 8 << 20

// spans appends the spans holding bytes [off, off+n) of the operand's
// segment stream.
func (o *Operand) spans(out []span, off, n uint64) []span {
	if o.il != nil {
		return o.il.spans(o.Segments, &o.cum, out, off, n)
	}
	return spansOf(o.Segments, &o.cum, out, off, n)
}

// spansOf appends the spans holding bytes [off, off+n) of the stream that
// segs make, coalescing adjacent ones; *cum is the start of each segment in
// the stream, built on first use.
func spansOf(segs []Segment, cum *[]uint64, out []span, off, n uint64) []span {
	starts := segmentStarts(segs, cum)
	i := sort.Search(len(starts), func(i int) bool { return starts[i] > off }) - 1
	for ; n > 0 && i >= 0 && i < len(segs); i++ {
		seg := segs[i]
		within := off - starts[i]
		take := min(n, seg.Length-within)
		sp := span{file: seg.File, off: int64(seg.Offset + within), n: int64(take)}
		if k := len(out) - 1; k >= 0 && out[k].file == sp.file && out[k].off+out[k].n == sp.off {
			out[k].n += sp.n
		} else {
			out = append(out, sp)
		}
		off, n = off+take, n-take
	}
	return out
}

// segmentStarts is *cum, the start of each segment in the stream segs
// make, built on first use.
func segmentStarts(segs []Segment, cum *[]uint64) []uint64 {
	if *cum == nil {
		*cum = make([]uint64, len(segs))
		var at uint64
		for i, s := range segs {
			(*cum)[i] = at
			at += s.Length
		}
	}
	return *cum
}

// blocking is how a pair is cut into blocks.
type blocking struct {
	n       uint64 // elements
	rows    uint64 // rows of the last two dims (when a side is transposed)
	cols    uint64
	perRows uint64 // rows a block holds
	perMat  uint64 // blocks a matrix
	blocks  uint64
	byRows  bool
}

func newBlocking(p *Pair) blocking {
	if p.Published.tiled() || p.Exported.tiled() {
		return newTiledBlocking(p) // segtiles.go
	}
	b := blocking{n: p.Published.Elements()}
	shape := p.Published.Shape
	transposed := (p.Published.Transposed || p.Exported.Transposed) && len(shape) >= 2
	if (transposed || p.codec) && b.n > 0 {
		b.byRows = true
		d, _ := matrixDims(shape)
		b.rows, b.cols = d.Rows, d.Cols
		b.perRows = max(1, blockElems/b.cols)
		// The widest band whose tile (every stored row's piece of it, on
		// the transposed side with the widest elements) fits tileBytes.
		e := uint64(0)
		for _, o := range [2]*Operand{&p.Published, &p.Exported} {
			if o.Transposed {
				e = max(e, o.elemBytes(), 1)
			}
		}
		if e > 0 {
			if w := tileBytes / e / b.cols; w > b.perRows {
				b.perRows = w
			}
		}
		b.perRows = alignRows(codecBandRows(p, b.perRows, b.rows, b.cols), codecTileRows(p), b.rows)
		b.perMat = (b.rows + b.perRows - 1) / b.perRows
		b.blocks = b.n / (b.rows * b.cols) * b.perMat
		return b
	}
	b.blocks = (b.n + blockElems - 1) / blockElems
	return b
}

// job builds block k of pair p.
func (b blocking) job(p *Pair, k uint64) *job {
	j := &job{pair: p, block: int(k)}
	if !b.byRows {
		j.start = k * blockElems
		j.n = min(blockElems, b.n-j.start)
		for side, o := range [2]*Operand{&p.Published, &p.Exported} {
			size := o.DType.Bytes(j.n)
			j.fills[side] = fill{spans: o.spans(nil, o.DType.Bytes(j.start), size), size: int(size)}
		}
		return j
	}
	m, r := k/b.perMat, k%b.perMat*b.perRows
	r1 := min(r+b.perRows, b.rows)
	mat := b.rows * b.cols
	j.start, j.n = m*mat+r*b.cols, (r1-r)*b.cols
	for side, o := range [2]*Operand{&p.Published, &p.Exported} {
		if o.Codec != nil {
			var err error
			if j.fills[side], err = o.codecFill(m, r, r1); err != nil {
				j.err = err
			}
			continue
		}
		e := o.elemBytes()
		if o.tiled() {
			j.fills[side] = o.tiledFill(r, r1, b.cols)
			continue
		}
		if !o.Transposed {
			size := o.DType.Bytes(j.n)
			j.fills[side] = fill{spans: o.spans(nil, o.DType.Bytes(j.start), size), size: int(size)}
			continue
		}
		// Stored as [cols, rows]: the block's rows are a column range of
		// each stored row, read as one tile and transposed in memory.
		var spans []span
		for c := range b.cols {
			spans = o.spans(spans, (m*mat+c*b.rows+r)*e, (r1-r)*e)
		}
		j.fills[side] = fill{spans: spans, size: int(j.n * e), transpose: &tile{rows: int(b.cols), cols: int(r1 - r), elem: int(e)}}
	}
	return j
}

// tileReadAhead bounds the blocks read ahead when transposed pairs make
// blocks of whole tiles (up to tileBytes a side, and as much again before
// the transpose): as many as fit in tileBudget, at least one. Every buffer
// of the scheduler's pool can grow to the largest block.
func tileReadAhead(pairs []*Pair, readAhead int) int {
	var most uint64
	for _, p := range pairs {
		if b := p.blocks; b.byRows {
			var n uint64
			for _, o := range [2]*Operand{&p.Published, &p.Exported} {
				n += o.blockBytes(b)
				if o.Transposed || o.tiled() {
					n += b.perRows * b.cols * o.elemBytes()
				}
			}
			most = max(most, n)
		}
	}
	if most == 0 {
		return readAhead
	}
	return int(max(1, min(uint64(readAhead), tileBudget/most)))
}

// tileBudget is the memory the blocks read ahead of transposed pairs may
// take.
const tileBudget = 24 << 20
