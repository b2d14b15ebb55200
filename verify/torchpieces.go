package verify

import (
	"fmt"
	"sort"

	"github.com/ckptcheck/ckptcheck/adapter"
	"github.com/ckptcheck/ckptcheck/checkpoint"
	"github.com/ckptcheck/ckptcheck/torchsave"
	"github.com/ckptcheck/ckptcheck/verify/internal/values"
)

// A piece is a byte range of a shard's file (Shard.Data, absolute
// offsets) holding a run of a physical tensor's elements: a torch tensor
// that is a strided view, or a DCP tensor assembled from its chunks, is
// the concatenation of its pieces. at is the piece's start in the
// tensor's bytes.
type piece struct {
	shard  *checkpoint.Shard
	off, n uint64
	at     uint64
}

// torchLayout sets a source's pieces and whether its range holds the
// tensor's transpose, from a torch file's (or DCP step's) tensor i; a
// piece in another item file of a DCP step is found among c's shards by
// name (*named maps them, built on first use).
func torchLayout(src *Source, c *checkpoint.Checkpoint, i int, named *map[string]*checkpoint.Shard) {
	s := src.Shard
	if tr, ok := s.Header.(interface{ TensorTransposed(int) bool }); ok {
		src.Transposed = tr.TensorTransposed(i)
	}
	tp, ok := s.Header.(interface{ TensorPieces(int) []torchsave.Piece })
	if !ok {
		return
	}
	ps := tp.TensorPieces(i)
	if ps == nil {
		return
	}
	src.Pieces = make([]piece, len(ps))
	var at uint64
	for k, p := range ps {
		shard := s
		if p.File != "" {
			if *named == nil {
				*named = make(map[string]*checkpoint.Shard, len(c.Shards))
				for _, sh := range c.Shards {
					(*named)[sh.Name] = sh
				}
			}
			shard = (*named)[p.File]
			if shard == nil || shard.File == nil {
				src.Err = fmt.Errorf("its piece in %s is in no file of the checkpoint that could be read", p.File)
				src.Pieces = nil
				return
			}
		}
		src.Pieces[k] = piece{shard: shard, off: p.Offset, n: p.Length, at: at}
		at += p.Length
	}
}

// pieceSegments appends the engine segments holding bytes [off, off+n) of
// a source made of pieces; id numbers a shard's reader.
func pieceSegments(out []values.Segment, ps []piece, off, n uint64, id func(*checkpoint.Shard) int) []values.Segment {
	k := sort.Search(len(ps), func(k int) bool { return ps[k].at > off }) - 1
	for ; n > 0 && k >= 0 && k < len(ps); k++ {
		p := ps[k]
		within := off - p.at
		take := min(n, p.n-within)
		seg := values.Segment{File: id(p.shard), Offset: p.off + within, Length: take}
		if last := len(out) - 1; last >= 0 && out[last].File == seg.File && out[last].Offset+out[last].Length == seg.Offset {
			out[last].Length += take
		} else {
			out = append(out, seg)
		}
		off, n = off+take, n-take
	}
	return out
}

// storedTransposedAs says whether the engine reads a logical tensor as
// the transpose of its segments: the adapter's transpose, undone or made
// by a torch view stored transposed. ok is false when a transposed
// source is mapped in part (a slice of it), which is not read.
func storedTransposedAs(t adapter.Tensor, sources []Source) (transposed, ok bool) {
	for _, seg := range t.Segments {
		src := sources[seg.Source]
		if !src.Transposed {
			continue
		}
		if len(t.Segments) != 1 || seg.Offset != 0 || seg.Length != src.Tensor.Size() || t.Quant != nil {
			return false, false
		}
		return !t.Transposed, true
	}
	return t.Transposed, true
}
