package values

import (
	"fmt"
	"unsafe"

	"github.com/ckptcheck/ckptcheck/quant"
)

// Codec operands stored transposed: gpt-oss's MXFP4 experts hold each
// expert as [rows, G·32] blocks, and transformers dequantizes it to the
// transpose, [G·32, rows]. The codec decodes the stored matrices; the
// logical rows [r0, r1) of a block are the column band [r0, r1) of every
// stored row. The codec names that band's bytes (a ColumnBander), which
// hold a weight of Dims{stored rows, r1 − r0}: the worker decodes it, and
// its steps, whole, and transposes both in memory into the logical
// row-major order the kernels read. Blocks are bands as wide as a tile of
// tileBytes of decoded float32 allows (newBlocking), so memory is bounded
// by the tile, not the matrix; the leading dimensions (an expert stack)
// stay outer.

// A ColumnBander is a codec that reads a band of columns of every row:
// ColumnSpans appends the spans holding columns [c0, c1) of every row of a
// weight of d, the band aligned to the codec's Tile().Cols. What they
// hold, part by part in span order, is a weight of Dims{d.Rows, c1 − c0},
// which the codec's Decode (and Steps) read as rows [0, d.Rows).
type ColumnBander interface {
	ColumnSpans(d quant.Dims, c0, c1 uint64, dst []quant.Span) ([]quant.Span, error)
}

// checkTransposedCodec says why a transposed codec operand cannot be read,
// or nil.
func (o *Operand) checkTransposedCodec() error {
	if _, ok := o.Codec.(ColumnBander); !ok {
		return fmt.Errorf("transposed: the codec reads no band of its columns")
	}
	if len(o.Shape) < 2 {
		return fmt.Errorf("transposed: %d dimensions", len(o.Shape))
	}
	return nil
}

// codecDims is one matrix of the operand as its codec sees it: the logical
// matrix, or for a transposed operand its transpose, as stored; and how
// many matrices there are.
func (o *Operand) codecDims() (quant.Dims, uint64) {
	d, matrices := matrixDims(o.Shape)
	if o.Transposed {
		d.Rows, d.Cols = d.Cols, d.Rows
	}
	return d, matrices
}

// logicalTile is the codec's tile in logical rows and columns.
func (o *Operand) logicalTile() quant.Tile {
	t := o.Codec.Tile()
	if o.Transposed {
		t.Rows, t.Cols = t.Cols, t.Rows
	}
	return t
}

// codecSpans are the spans of the parts that logical rows [r0, r1) of a
// matrix need.
func (o *Operand) codecSpans(r0, r1 uint64) ([]quant.Span, error) {
	d, _ := o.codecDims()
	if !o.Transposed {
		return o.Codec.Spans(d, r0, r1, nil)
	}
	cb, ok := o.Codec.(ColumnBander)
	if !ok {
		return nil, o.checkTransposedCodec()
	}
	return cb.ColumnSpans(d, r0, r1, nil)
}

// decodeTransposed decodes a block of a transposed codec side from its
// filled bytes raw: the band as stored, then transposed into dc.values
// (and, when the pair measures steps, the steps into dc.steps). It returns
// the block as the kernels' F32 bytes.
func (dc *decoder) decodeTransposed(j *job, side int, raw []byte) ([]byte, error) {
	p := j.pair
	o := [2]*Operand{&p.Published, &p.Exported}[side]
	ld, _ := matrixDims(o.Shape)
	mat := ld.Rows * ld.Cols
	r0, w := j.start%mat/ld.Cols, j.n/ld.Cols
	band := quant.Dims{Rows: ld.Cols, Cols: w} // as stored: a row a logical column
	parts := dc.parts[side][:0]
	for _, n := range j.fills[side].parts {
		parts, raw = append(parts, raw[:n]), raw[n:]
	}
	dc.parts[side] = parts
	vals, tmp := growF32(&dc.values[side], j.n), growF32(&dc.band, j.n)
	where := func(what string, err error) error {
		return fmt.Errorf("%s rows [%d, %d) of matrix %d, stored transposed: %w", what, r0, r0+w, j.start/mat, err)
	}
	if err := o.Codec.Decode(band, 0, band.Rows, parts, tmp); err != nil {
		return nil, where("decoding", err)
	}
	transposeOf(f32Words(vals), f32Words(tmp), int(band.Rows), int(band.Cols))
	dc.hasSteps[side] = false
	if st := p.stepper[side]; st != nil {
		if err := st.Steps(band, 0, band.Rows, parts, tmp); err != nil {
			return nil, where("steps of", err)
		}
		transposeOf(f32Words(growF32(&dc.steps[side], j.n)), f32Words(tmp), int(band.Rows), int(band.Cols))
		dc.hasSteps[side] = true
	}
	return f32Bytes(vals), nil
}

// growF32 is *buf with n values, grown when it holds fewer.
func growF32(buf *[]float32, n uint64) []float32 {
	if uint64(cap(*buf)) < n {
		*buf = make([]float32, n)
	}
	return (*buf)[:n]
}

// f32Words is vals as their bits, in place, for the transpose.
func f32Words(vals []float32) []uint32 {
	return unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(vals))), len(vals))
}
