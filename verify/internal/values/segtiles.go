package values

import (
	"fmt"
	"slices"
	"sort"
)

// Operands with transposed segments: llama.cpp splits DeepSeek's
// kv_b_proj per head into attn_k_b, stored transposed, and attn_v_b, so
// HF's rows are, head by head, a tile of attn_k_b read transposed, then
// rows of attn_v_b. A transposed segment holds whole logical rows of the
// operand (rows of its last dimension, the leading dimensions flattened),
// stored as their transpose, [cols, rows]. Blocks are bands of rows that
// never cross a transposed segment's edge (newBlocking), so a block reads
// plain spans or one tile, which the scheduler transposes as it does a
// transposed operand's.

// tiled reports an operand with a transposed segment.
func (o *Operand) tiled() bool {
	return slices.ContainsFunc(o.Segments, func(s Segment) bool { return s.Transposed })
}

// rowBytes is the bytes of a row of the operand's last dimension.
func (o *Operand) rowBytes() uint64 {
	if len(o.Shape) == 0 {
		return 0
	}
	return o.DType.Bytes(o.Shape[len(o.Shape)-1])
}

// prepareTiled checks a pair's transposed segments: whole rows of a plain
// operand whose other side reads rows as they come, a codec's matrix (of
// 2 dimensions) whole tiles of rows between the segments' edges.
func (p *Pair) prepareTiled() error {
	for side, o := range [2]*Operand{&p.Published, &p.Exported} {
		if !o.tiled() {
			continue
		}
		what := [2]string{"published", "exported"}[side]
		other := [2]*Operand{&p.Exported, &p.Published}[side]
		switch {
		case o.Codec != nil || o.Transposed || o.Interleave != nil || len(o.Shape) < 2:
			return fmt.Errorf("%s %v: transposed segments in an operand stored transposed, interleaved or encoded, or of fewer than 2 dimensions", what, o.Shape)
		case other.Transposed || other.Codec != nil && len(other.Shape) != 2:
			return fmt.Errorf("%s %v: transposed segments against a side stored transposed or encoded in more than 2 dimensions", what, o.Shape)
		}
		row := o.rowBytes()
		var at uint64
		for _, s := range o.Segments {
			if s.Transposed && (row == 0 || s.Length == 0 || at%row != 0 || s.Length%row != 0) {
				return fmt.Errorf("%s %v: a transposed segment of %d bytes at %d holds no whole rows of %d bytes", what, o.Shape, s.Length, at, row)
			}
			at += s.Length
		}
		if at != o.Size() {
			return fmt.Errorf("%s %v: segments hold %d bytes, the shape %d", what, o.Shape, at, o.Size())
		}
		if t := codecTileRows(p); o.TileRows()%t != 0 {
			return fmt.Errorf("%s %v: transposed segments whose edges are not on the other side's tiles of %d rows", what, o.Shape, t)
		}
	}
	return nil
}

// TileRows is the largest band of rows that crosses no edge of the
// operand's transposed segments: the gcd of the rows before each edge (0
// for an operand without them). It reads only the dtype, the shape and
// the segments' lengths.
func (o *Operand) TileRows() uint64 {
	row := o.rowBytes()
	var g, at uint64
	for _, s := range o.Segments {
		if s.Transposed && row > 0 {
			g = gcd(gcd(g, at/row), (at+s.Length)/row)
		}
		at += s.Length
	}
	return g
}

func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// newTiledBlocking cuts a pair with transposed segments into bands of
// rows, the leading dimensions flattened: as wide as the segments' edges
// allow, halved while a band's tile passes tileBytes.
func newTiledBlocking(p *Pair) blocking {
	b := blocking{n: p.Published.Elements(), byRows: true}
	shape := p.Published.Shape
	b.cols = shape[len(shape)-1]
	if b.n == 0 || b.cols == 0 {
		return b
	}
	b.rows = b.n / b.cols
	g := gcd(p.Published.TileRows(), p.Exported.TileRows()) // a multiple of a codec side's tile (prepareTiled)
	t := codecTileRows(p)
	e := max(p.Published.elemBytes(), p.Exported.elemBytes(), 1)
	for g%(2*t) == 0 && g*b.cols*e > tileBytes {
		g /= 2
	}
	b.perRows = g
	b.perMat = (b.rows + g - 1) / g
	b.blocks = b.perMat
	return b
}

// tiledFill is how to fill rows [r0, r1) of a tiled operand of cols
// columns, which cross no edge of its transposed segments: the plain
// spans, or the band of every stored row of the one transposed segment
// that holds them, a tile to transpose.
func (o *Operand) tiledFill(r0, r1, cols uint64) fill {
	e := o.elemBytes()
	row := cols * e
	size := (r1 - r0) * row
	starts := segmentStarts(o.Segments, &o.cum)
	i := sort.Search(len(starts), func(i int) bool { return starts[i] > r0*row }) - 1
	seg := o.Segments[i]
	if !seg.Transposed {
		return fill{spans: o.spans(nil, r0*row, size), size: int(size)}
	}
	first, rows := starts[i]/row, seg.Length/row
	var spans []span
	for c := range cols {
		sp := span{file: seg.File, off: int64(seg.Offset + (c*rows+r0-first)*e), n: int64((r1 - r0) * e)}
		if k := len(spans) - 1; k >= 0 && spans[k].off+spans[k].n == sp.off {
			spans[k].n += sp.n
		} else {
			spans = append(spans, sp)
		}
	}
	return fill{spans: spans, size: int(size), transpose: &tile{rows: int(cols), cols: int(r1 - r0), elem: int(e)}}
}
