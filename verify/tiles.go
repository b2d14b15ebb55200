package verify

import (
	"fmt"
	"slices"

	"github.com/ckptcheck/ckptcheck/adapter"
	"github.com/ckptcheck/ckptcheck/verify/internal/values"
)

// Tiles stored transposed (adapter.Segment.Transposed: DeepSeek's
// kv_b_proj, per head a tile of llama.cpp's attn_k_b read transposed, then
// rows of attn_v_b) are read in bands of rows that cross no tile's edge.
// The other side must read its rows as they come, in such bands: plain, or
// a codec's matrix of 2 dimensions whose tiles of rows the edges fall on.

// tiled reports a tensor with a segment stored transposed.
func tiled(t adapter.Tensor) bool {
	return slices.ContainsFunc(t.Segments, func(s adapter.Segment) bool { return s.Transposed })
}

// tileEdges is the gcd of the rows before each edge of a tiled tensor's
// transposed segments, as the value engine cuts its bands.
func tileEdges(t adapter.Tensor) uint64 {
	o := values.Operand{DType: t.DType, Shape: t.Shape, Segments: make([]values.Segment, len(t.Segments))}
	for i, s := range t.Segments {
		o.Segments[i] = values.Segment{Length: s.Length, Transposed: s.Transposed}
	}
	return o.TileRows()
}

// tilesUnread says why a pair with a tiled side is not compared, or "".
func (pr *pair) tilesUnread() string {
	for _, x := range [2][2]*operand{{&pr.pub, &pr.exp}, {&pr.exp, &pr.pub}} {
		t, other := x[0].t, x[1].t
		if !tiled(t) {
			continue
		}
		switch transposed, _ := storedTransposedAs(other, x[1].src); {
		case transposed || other.Transposed:
			return fmt.Sprintf("%s holds tiles stored transposed, %s is read transposed; their values are not read", t.Source, other.Source)
		case pr.quant == nil || other.Quant == nil:
		case len(other.Quant.Shape) != 2 || storedTransposed(other.Quant.Codec, other.Quant.Shape):
			return fmt.Sprintf("%s holds tiles stored transposed, %s is %s of %d dimensions; their values are not read",
				t.Source, other.Source, other.Quant.Codec, len(other.Quant.Shape))
		case tileEdges(t)%max(other.Quant.Codec.Tile().Rows, 1) != 0:
			return fmt.Sprintf("%s holds tiles stored transposed whose edges are not on %s's tiles of %d rows; their values are not read",
				t.Source, other.Quant.Codec, other.Quant.Codec.Tile().Rows)
		}
	}
	return ""
}
