package verify

import (
	"fmt"
	"io"
	"sort"

	"github.com/ckptcheck/ckptcheck/adapter"
	"github.com/ckptcheck/ckptcheck/checkpoint"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// The read planner turns each pair of logical tensors into jobs: blocks of
// blockElems elements (whole rows when a side is transposed), each with the
// byte spans that hold the block on either side. Blocks are fixed by the
// headers alone, so results do not depend on scheduling.

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

// An operand is one side of a pair: a logical tensor and the physical
// tensors its segments point into.
type operand struct {
	t   adapter.Tensor
	src []Source
	// transposed: the segments hold the elements with the last two
	// dimensions swapped; the logical tensor is their transpose.
	transposed bool
	cum        []uint64 // start of each segment in the logical bytes, built on first use
}

func (o *operand) elemBytes() uint64 { return uint64(o.t.DType.Bits() / 8) }

// size is the logical tensor's size in bytes.
func (o *operand) size() uint64 {
	n, _ := safetensors.TensorInfo{Shape: o.t.Shape}.NumElements()
	return n * uint64(o.t.DType.Bits()) / 8
}

// unreadable says why the operand's bytes cannot be read, or "": a shard
// that failed validation (truncated, overlapping offsets) is not read.
func (o *operand) unreadable() string {
	for _, seg := range o.t.Segments {
		if s := o.src[seg.Source].Shard; s.File == nil {
			return fmt.Sprintf("%s failed validation; its values are not read", s.Path)
		}
	}
	return ""
}

// files numbers the readable shards of a comparison, so spans can name them.
type files struct {
	ids     map[*checkpoint.Shard]int
	readers []io.ReaderAt
}

func (fs *files) id(s *checkpoint.Shard) int {
	if i, ok := fs.ids[s]; ok {
		return i
	}
	if fs.ids == nil {
		fs.ids = make(map[*checkpoint.Shard]int)
	}
	fs.ids[s] = len(fs.readers)
	fs.readers = append(fs.readers, s.File.DataSection())
	return fs.ids[s]
}

// spans appends the spans holding bytes [off, off+n) of the operand's
// segment stream.
func (o *operand) spans(fs *files, out []span, off, n uint64) []span {
	if o.cum == nil {
		o.cum = make([]uint64, len(o.t.Segments))
		var at uint64
		for i, s := range o.t.Segments {
			o.cum[i] = at
			at += s.Length
		}
	}
	i := sort.Search(len(o.cum), func(i int) bool { return o.cum[i] > off }) - 1
	for ; n > 0 && i >= 0 && i < len(o.t.Segments); i++ {
		seg := o.t.Segments[i]
		within := off - o.cum[i]
		take := min(n, seg.Length-within)
		src := o.src[seg.Source]
		sp := span{file: fs.id(src.Shard), off: int64(src.Tensor.DataOffsets[0] + seg.Offset + within), n: int64(take)}
		if k := len(out) - 1; k >= 0 && out[k].file == sp.file && out[k].off+out[k].n == sp.off {
			out[k].n += sp.n
		} else {
			out = append(out, sp)
		}
		off, n = off+take, n-take
	}
	return out
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

func newBlocking(p *pair) blocking {
	b := blocking{n: p.stats.Elements}
	shape := p.pub.t.Shape
	if (p.pub.transposed || p.exp.transposed) && len(shape) >= 2 && b.n > 0 {
		b.byRows = true
		b.rows, b.cols = shape[len(shape)-2], shape[len(shape)-1]
		b.perRows = max(1, blockElems/b.cols)
		// The widest band whose tile (every stored row's piece of it, on
		// the transposed side with the widest elements) fits tileBytes.
		e := uint64(1)
		for _, o := range [2]*operand{&p.pub, &p.exp} {
			if o.transposed {
				e = max(e, o.elemBytes())
			}
		}
		if w := tileBytes / e / b.cols; w > b.perRows {
			b.perRows = w
		}
		b.perRows = min(b.perRows, b.rows)
		b.perMat = (b.rows + b.perRows - 1) / b.perRows
		b.blocks = b.n / (b.rows * b.cols) * b.perMat
		return b
	}
	b.blocks = (b.n + blockElems - 1) / blockElems
	return b
}

// job builds block k of pair p.
func (b blocking) job(fs *files, p *pair, k uint64) *job {
	j := &job{pair: p, block: int(k)}
	if !b.byRows {
		j.start = k * blockElems
		j.n = min(blockElems, b.n-j.start)
		for side, o := range [2]*operand{&p.pub, &p.exp} {
			e := o.elemBytes()
			if e == 0 { // sub-byte dtypes: bits, whole bytes per block
				bits := uint64(o.t.DType.Bits())
				j.fills[side] = fill{spans: o.spans(fs, nil, j.start*bits/8, j.n*bits/8), size: int(j.n * bits / 8)}
				continue
			}
			j.fills[side] = fill{spans: o.spans(fs, nil, j.start*e, j.n*e), size: int(j.n * e)}
		}
		return j
	}
	m, r := k/b.perMat, k%b.perMat*b.perRows
	r1 := min(r+b.perRows, b.rows)
	mat := b.rows * b.cols
	j.start, j.n = m*mat+r*b.cols, (r1-r)*b.cols
	for side, o := range [2]*operand{&p.pub, &p.exp} {
		e := o.elemBytes()
		if !o.transposed {
			j.fills[side] = fill{spans: o.spans(fs, nil, j.start*e, j.n*e), size: int(j.n * e)}
			continue
		}
		// Stored as [cols, rows]: the block's rows are a column range of
		// each stored row, read as one tile and transposed in memory.
		var spans []span
		for c := range b.cols {
			spans = o.spans(fs, spans, (m*mat+c*b.rows+r)*e, (r1-r)*e)
		}
		j.fills[side] = fill{spans: spans, size: int(j.n * e), transpose: &tile{rows: int(b.cols), cols: int(r1 - r), elem: int(e)}}
	}
	return j
}

// tileReadAhead bounds the blocks read ahead when transposed pairs make
// blocks of whole tiles (up to tileBytes a side, and as much again before
// the transpose): as many as fit in tileBudget, at least one. Every buffer
// of the scheduler's pool can grow to the largest block.
func tileReadAhead(pairs []*pair, readAhead int) int {
	var most uint64
	for _, p := range pairs {
		if b := p.blocks; b.byRows {
			n := b.perRows * b.cols * (p.pub.elemBytes() + p.exp.elemBytes())
			if p.pub.transposed {
				n += b.perRows * b.cols * p.pub.elemBytes()
			}
			if p.exp.transposed {
				n += b.perRows * b.cols * p.exp.elemBytes()
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
