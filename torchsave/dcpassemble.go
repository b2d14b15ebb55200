package torchsave

import (
	"cmp"
	"fmt"
	"slices"
	"sort"

	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// A chunkRun is a run of a DCP tensor's elements that one chunk holds
// contiguously, in bytes: at g of the tensor's row-major bytes, at local
// of the chunk's.
type chunkRun struct {
	g, local, n uint64
	chunk       int
}

// assemble places a tensor's chunks in its row-major order, as pieces of
// the step's item files. A chunk is runs of the tensor: one per index of
// its dimensions before the last it does not span whole (one run for a
// chunk of whole rows, as dim-0 sharding makes; a row a chunk for a
// column shard; a row of a tile for a 2-D grid). items are the chunks'
// tensors as read from their items. why says, when the tensor is not
// assembled, what layout is not expressed; the pieces come out of
// *budget.
func assemble(t *DCPTensor, items []Tensor, budget *int) (pieces []Piece, why string) {
	limit := uint64(min(maxPieces, max(*budget, 0)))
	n := len(t.Shape)
	stride := make([]uint64, n) // of the tensor, in elements
	acc := uint64(1)
	for d := n - 1; d >= 0; d-- {
		stride[d] = acc
		acc *= t.Shape[d] // Tiling has counted the elements
	}
	es := t.DType.Bytes(1)
	var total uint64
	partial := make([]int, len(t.Chunks)) // each chunk's last dimension not spanned whole, or -1
	for k, c := range t.Chunks {
		numel, _ := c.numElements()
		if numel == 0 {
			continue
		}
		d := n - 1
		for d >= 0 && c.Sizes[d] == t.Shape[d] {
			d--
		}
		partial[k] = d
		run := acc
		if d >= 0 {
			run = c.Sizes[d] * stride[d]
		}
		total += numel / run
		if total > limit {
			return nil, fmt.Sprintf("its chunks up to %s would be read in more than %d pieces", region(c.Offsets, c.Sizes), limit)
		}
	}
	runs := make([]chunkRun, 0, total)
	for k, c := range t.Chunks {
		if numel, _ := c.numElements(); numel > 0 {
			runs = chunkRuns(runs, c, k, partial[k], stride, es)
		}
	}
	slices.SortFunc(runs, func(a, b chunkRun) int { return cmp.Compare(a.g, b.g) })
	local := make([][]Piece, len(items))
	for k, it := range items {
		var ok bool
		if local[k], ok = itemPieces(it, t.Chunks[k].Item, limit); !ok {
			return nil, fmt.Sprintf("chunk %s's item is a strided view of more than %d pieces", region(t.Chunks[k].Offsets, t.Chunks[k].Sizes), limit)
		}
	}
	cums := make([][]uint64, len(items))
	var at uint64
	for _, r := range runs {
		if r.g != at {
			return nil, fmt.Sprintf("its chunks' runs leave bytes %d to %d out", at, r.g) // Tiling rules it out
		}
		pieces = appendPieces(pieces, local[r.chunk], &cums[r.chunk], r.local, r.n)
		if uint64(len(pieces)) > limit {
			return nil, fmt.Sprintf("it would be read in more than %d pieces", limit)
		}
		at += r.n
	}
	*budget -= len(pieces)
	if pieces == nil {
		pieces = []Piece{}
	}
	return pieces, ""
}

// chunkRuns appends chunk k's runs, d being its last dimension not
// spanned whole (-1: the chunk is the whole tensor): an odometer over its
// dimensions before d, each run its extent from d on.
func chunkRuns(out []chunkRun, c DCPChunk, k, d int, stride []uint64, es uint64) []chunkRun {
	numel, _ := c.numElements()
	if d < 0 {
		return append(out, chunkRun{n: numel * es, chunk: k})
	}
	run := c.Sizes[d] * stride[d]
	var base uint64
	for j, o := range c.Offsets {
		base += o * stride[j]
	}
	idx := make([]uint64, d)
	var local uint64
	for range numel / run {
		g := base
		for j := range d {
			g += idx[j] * stride[j]
		}
		out = append(out, chunkRun{g: g * es, local: local * es, n: run * es, chunk: k})
		local += run
		for j := d - 1; j >= 0; j-- {
			if idx[j]++; idx[j] < c.Sizes[j] {
				break
			}
			idx[j] = 0
		}
	}
	return out
}

// itemPieces is a chunk's bytes in its row-major order, as pieces of its
// item's file: the item's range, its pieces, or for a transposed view its
// strided runs.
func itemPieces(it Tensor, item DCPItem, limit uint64) ([]Piece, bool) {
	if it.Pieces != nil {
		out := make([]Piece, len(it.Pieces))
		for i, p := range it.Pieces {
			out[i] = Piece{File: item.RelativePath, Offset: item.Offset + p.Offset, Length: p.Length}
		}
		return out, true
	}
	if !it.Transposed {
		return []Piece{{File: item.RelativePath, Offset: item.Offset + uint64(it.Offset), Length: uint64(it.Size)}}, true
	}
	es := it.DType.Bytes(1)
	data := item.Offset + uint64(it.Offset) - it.StorageOffset*es
	var out []Piece
	_, ok := viewRuns(it.Shape, it.Stride, it.StorageOffset, limit, func(off, n uint64) {
		out = append(out, Piece{File: item.RelativePath, Offset: data + off*es, Length: n * es})
	})
	return out, ok
}

// appendPieces appends the pieces holding bytes [off, off+n) of the
// stream ps make, coalescing adjacent ones; *cum is each piece's start in
// the stream, built on first use.
func appendPieces(out, ps []Piece, cum *[]uint64, off, n uint64) []Piece {
	if *cum == nil {
		*cum = make([]uint64, len(ps))
		var at uint64
		for i, p := range ps {
			(*cum)[i] = at
			at += p.Length
		}
	}
	starts := *cum
	i := sort.Search(len(starts), func(i int) bool { return starts[i] > off }) - 1
	for ; n > 0 && i >= 0 && i < len(ps); i++ {
		p := ps[i]
		within := off - starts[i]
		take := min(n, p.Length-within)
		q := Piece{File: p.File, Offset: p.Offset + within, Length: take}
		if last := len(out) - 1; last >= 0 && out[last].File == q.File && out[last].Offset+out[last].Length == q.Offset {
			out[last].Length += take
		} else {
			out = append(out, q)
		}
		off, n = off+take, n-take
	}
	return out
}

func (c DCPChunk) numElements() (uint64, bool) { return tensorfile.NumElements(c.Sizes) }
