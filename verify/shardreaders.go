package verify

import (
	"io"

	"github.com/ckptcheck/ckptcheck/adapter"
	"github.com/ckptcheck/ckptcheck/checkpoint"
	"github.com/ckptcheck/ckptcheck/verify/internal/values"
)

// shardReaders numbers the shards the value engine reads: each shard's
// data section once, in the order first met.
type shardReaders struct {
	ids     map[*checkpoint.Shard]int
	readers []io.ReaderAt
}

// segments are a tensor's segments as byte ranges of its shards' data
// sections (a safetensors shard's data section; the whole file of other
// formats, whose offsets are absolute).
func (rs *shardReaders) segments(t adapter.Tensor, sources []Source) []values.Segment {
	if rs.ids == nil {
		rs.ids = map[*checkpoint.Shard]int{}
	}
	segs := make([]values.Segment, 0, len(t.Segments))
	for _, seg := range t.Segments {
		src := sources[seg.Source]
		if src.Pieces != nil { // a tile in pieces is unreadable (operand.unreadable)
			segs = pieceSegments(segs, src.Pieces, seg.Offset, seg.Length, rs.id)
			continue
		}
		segs = append(segs, values.Segment{File: rs.id(src.Shard), Offset: src.Tensor.DataOffsets[0] + seg.Offset, Length: seg.Length,
			Transposed: seg.Transposed})
	}
	return segs
}

// id numbers a shard's reader, adding it when first met.
func (rs *shardReaders) id(s *checkpoint.Shard) int {
	id, ok := rs.ids[s]
	if !ok {
		id = len(rs.readers)
		rs.ids[s] = id
		if h := s.Safetensors(); h != nil {
			rs.readers = append(rs.readers, h.DataSection())
		} else {
			rs.readers = append(rs.readers, s.Data) // other formats: absolute offsets
		}
	}
	return id
}

// operand gives the value engine a plain operand.
func (rs *shardReaders) operand(o *operand) values.Operand {
	transposed, _ := storedTransposedAs(o.t, o.src) // unreadable says when not ok
	return values.Operand{DType: o.t.DType, Shape: o.t.Shape, Segments: rs.segments(o.t, o.src), Transposed: transposed, Interleave: o.t.Interleave}
}
