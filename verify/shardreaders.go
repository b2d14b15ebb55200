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
	segs := make([]values.Segment, len(t.Segments))
	for i, seg := range t.Segments {
		src := sources[seg.Source]
		id, ok := rs.ids[src.Shard]
		if !ok {
			id = len(rs.readers)
			rs.ids[src.Shard] = id
			if h := src.Shard.Safetensors(); h != nil {
				rs.readers = append(rs.readers, h.DataSection())
			} else {
				rs.readers = append(rs.readers, src.Shard.Data) // other formats: absolute offsets
			}
		}
		segs[i] = values.Segment{File: id, Offset: src.Tensor.DataOffsets[0] + seg.Offset, Length: seg.Length}
	}
	return segs
}

// operand gives the value engine a plain operand.
func (rs *shardReaders) operand(o *operand) values.Operand {
	return values.Operand{DType: o.t.DType, Shape: o.t.Shape, Segments: rs.segments(o.t, o.src), Transposed: o.t.Transposed}
}
