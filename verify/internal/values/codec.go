package values

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"reflect"
	"slices"
	"unsafe"

	"github.com/ckptcheck/ckptcheck/quant"
	"github.com/ckptcheck/ckptcheck/safetensors"
	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// Codec operands: the plan reads each block's spans of every part (the
// codec names them), and the worker decodes the filled parts into a float32
// buffer of its own that the kernels read as an F32 operand. Plain dtypes
// never come here: they keep the fused decode-and-statistics kernels.

// kernelDType is the dtype the kernels see: a codec side is the F32 tensor
// it decodes to.
func (o *Operand) kernelDType() safetensors.DType {
	if o.Codec != nil {
		return safetensors.F32
	}
	return o.DType
}

// sameCodec reports whether two codecs are one encoding, so that equal
// bytes mean equal values.
func sameCodec(a, b quant.Codec) bool {
	if a == nil || b == nil {
		return false
	}
	ta := reflect.TypeOf(a)
	return ta == reflect.TypeOf(b) && ta.Comparable() && a == b
}

// matrixDims is how a codec sees a logical shape: matrices (every
// dimension but the last two) of Rows × Cols; a 1-D tensor is one row, a
// scalar one value.
func matrixDims(shape []uint64) (d quant.Dims, matrices uint64) {
	switch len(shape) {
	case 0:
		return quant.Dims{Rows: 1, Cols: 1}, 1
	case 1:
		return quant.Dims{Rows: 1, Cols: shape[0]}, 1
	}
	matrices = 1
	for _, n := range shape[:len(shape)-2] {
		matrices *= n // Run checked that the elements do not overflow
	}
	return quant.Dims{Rows: shape[len(shape)-2], Cols: shape[len(shape)-1]}, matrices
}

// prepareCodecs checks the pair's codec sides against their shapes and
// parts, so that planning and decoding meet no surprise.
func (p *Pair) prepareCodecs() error {
	sides := [2]*Operand{&p.Published, &p.Exported}
	for side, o := range sides {
		what := [2]string{"published", "exported"}[side]
		if o.Codec == nil {
			if d := o.DType; !d.Decodable() || d.Lanes() != 1 {
				return fmt.Errorf("%s %s against a codec: not a dtype of real values", what, d)
			}
			continue
		}
		if err := o.prepareCodec(); err != nil {
			return fmt.Errorf("%s %s %v: %w", what, o.Codec, o.Shape, err)
		}
	}
	return nil
}

func (o *Operand) prepareCodec() error {
	if _, ok := tensorfile.NumElements(o.Shape); !ok {
		return fmt.Errorf("elements overflow")
	}
	if o.Transposed {
		if err := o.checkTransposedCodec(); err != nil { // codec_transposed.go
			return err
		}
	}
	parts := o.Codec.Parts()
	if len(o.Parts) != len(parts) {
		return fmt.Errorf("%d parts, the codec has %d", len(o.Parts), len(parts))
	}
	d, matrices := o.codecDims()
	o.partSize = make([]uint64, len(parts))
	if err := o.Codec.Sizes(d, o.partSize); err != nil {
		return err
	}
	o.partCum = make([][]uint64, len(parts))
	for i, segs := range o.Parts {
		hi, want := bits.Mul64(matrices, o.partSize[i])
		if have := segmentsLength(segs); hi != 0 || have != want {
			return fmt.Errorf("part %d (%s) holds %d bytes, the shape needs %d a matrix × %d", i, parts[i].Role, have, o.partSize[i], matrices)
		}
	}
	return nil
}

// segmentsLength is the bytes segs hold in all (saturating: no file holds
// so many).
func segmentsLength(segs []Segment) uint64 {
	var n uint64
	for _, s := range segs {
		var c uint64
		if n, c = bits.Add64(n, s.Length, 0); c != 0 {
			return math.MaxUint64
		}
	}
	return n
}

// codecTileRows is the row alignment the pair's codecs need: a multiple of
// every codec side's tile.
func codecTileRows(p *Pair) uint64 {
	t := uint64(1)
	for _, o := range [2]*Operand{&p.Published, &p.Exported} {
		if o.Codec != nil {
			r := max(o.logicalTile().Rows, 1)
			g := r
			for a := t; a != 0; g, a = a, g%a {
			}
			hi, l := bits.Mul64(t/g, r)
			if hi != 0 {
				return math.MaxUint64
			}
			t = l
		}
	}
	return t
}

// maxStridedBlock bounds how many times blockElems a block of a codec
// with strided parts may grow to (see codecBandRows).
const maxStridedBlock = 16

// codecBandRows widens a block of perRows rows for a codec side whose
// parts are stored across the logical rows (GPTQ's qweight [in/8, out]:
// rows [r0, r1) are a piece of every stored row): the reads coalesce
// through the gaps, so a block reads the part's stored rows whole, and a
// band of fewer than all rows reads the part again for every band.
// perRows doubles, up to maxStridedBlock·blockElems elements, while such a
// span's piece is less than its stride: the matrices of most models are a
// band each (every byte read once), and a larger one is read at most
// rows/(its band) times.
func codecBandRows(p *Pair, perRows, rows, cols uint64) uint64 {
	limit := min(rows, max(perRows, maxStridedBlock*blockElems/max(cols, 1)))
	for _, o := range [2]*Operand{&p.Published, &p.Exported} {
		if o.Codec == nil || o.Transposed { // a transposed side's band is a tile (newBlocking)
			continue
		}
		d, _ := matrixDims(o.Shape)
		for perRows < limit {
			qs, err := o.Codec.Spans(d, 0, alignRows(perRows, max(o.Codec.Tile().Rows, 1), rows), nil)
			if err != nil || !slices.ContainsFunc(qs, func(s quant.Span) bool { return s.Count > 1 && s.Len < s.Stride }) {
				break
			}
			perRows = min(2*perRows, limit)
		}
	}
	return perRows
}

// alignRows rounds a block's rows up to a multiple of tile, within rows: a
// block holds whole tiles, or runs to the last row.
func alignRows(perRows, tile, rows uint64) uint64 {
	if tile > 1 && perRows%tile != 0 {
		if tile >= rows || perRows > rows-tile { // rounding up would pass the last row
			return rows
		}
		perRows += tile - perRows%tile
	}
	return min(perRows, rows)
}

// codecFill is how to fill rows [r0, r1) of matrix m: every part's spans
// the codec names, part by part.
func (o *Operand) codecFill(m, r0, r1 uint64) (fill, error) {
	qs, err := o.codecSpans(r0, r1)
	if err != nil {
		return fill{}, fmt.Errorf("%s: %w", o.Codec, err)
	}
	for _, s := range qs {
		if s.Part < 0 || s.Part >= len(o.Parts) {
			return fill{}, fmt.Errorf("%s: span %+v of no part", o.Codec, s)
		}
	}
	f := fill{parts: make([]int, len(o.Parts))}
	for i := range o.Parts {
		base := m * o.partSize[i]
		for _, s := range qs {
			if s.Part != i || s.Len == 0 {
				continue
			}
			size, ok := s.Size()
			if end, ok2 := s.End(); !ok || !ok2 || end > o.partSize[i] {
				return fill{}, fmt.Errorf("%s: span %+v of rows [%d, %d) leaves part %d's %d bytes", o.Codec, s, r0, r1, i, o.partSize[i])
			}
			for k := range s.Count {
				if o.il != nil { // interleave.go: only a codec of one part
					f.spans = o.il.spans(o.Parts[i], &o.partCum[i], f.spans, base+s.Offset+k*s.Stride, s.Len)
					continue
				}
				f.spans = spansOf(o.Parts[i], &o.partCum[i], f.spans, base+s.Offset+k*s.Stride, s.Len)
			}
			f.parts[i] += int(size)
		}
		f.size += f.parts[i]
	}
	return f, nil
}

// blockBytes is what one block of b reads of the operand, at most.
func (o *Operand) blockBytes(b blocking) uint64 {
	if o.Codec == nil {
		return o.DType.Bytes(b.perRows * b.cols)
	}
	qs, err := o.codecSpans(0, b.perRows)
	if err != nil {
		return 0
	}
	var n uint64
	for _, s := range qs {
		size, _ := s.Size()
		n += size
	}
	return n
}

// A decoder is a worker's buffers for decoding codec sides, reused for
// every block and sized by the blocks.
type decoder struct {
	values [2][]float32
	parts  [2][][]byte
	// steps are a side's steps when its codec decoded them with its
	// values (a StepDecoder), valid when hasSteps says so.
	steps    [2][]float32
	hasSteps [2]bool
	band     []float32 // a transposed side's band before its transpose
}

// A StepDecoder is a Stepper that decodes values and their steps in one
// pass: what Decode and Steps write, at once.
type StepDecoder interface {
	DecodeSteps(d quant.Dims, r0, r1 uint64, parts [][]byte, dst, steps []float32) error
}

// decode turns the codec sides of a filled block into the bytes of the F32
// values they decode to; plain sides pass through.
func (dc *decoder) decode(j *job, pb, eb []byte) ([]byte, []byte, error) {
	out := [2][]byte{pb, eb}
	for side, o := range [2]*Operand{&j.pair.Published, &j.pair.Exported} {
		if o.Codec == nil {
			continue
		}
		if o.Transposed { // codec_transposed.go
			var err error
			if out[side], err = dc.decodeTransposed(j, side, out[side]); err != nil {
				return nil, nil, err
			}
			continue
		}
		d, _ := matrixDims(o.Shape)
		mat := d.Rows * d.Cols
		r0 := j.start % mat / d.Cols
		r1 := r0 + j.n/d.Cols
		parts := dc.split(j, side, out[side])
		if uint64(cap(dc.values[side])) < j.n {
			dc.values[side] = make([]float32, j.n)
		}
		vals := dc.values[side][:j.n]
		var err error
		sd, fused := o.Codec.(StepDecoder)
		if dc.hasSteps[side] = fused && o.Steps == nil && j.pair.stepper[side] != nil; dc.hasSteps[side] {
			if uint64(cap(dc.steps[side])) < j.n {
				dc.steps[side] = make([]float32, j.n)
			}
			err = sd.DecodeSteps(d, r0, r1, parts, vals, dc.steps[side][:j.n])
		} else {
			err = o.Codec.Decode(d, r0, r1, parts, vals)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("decoding rows [%d, %d) of matrix %d: %w", r0, r1, j.start/mat, err)
		}
		out[side] = f32Bytes(vals)
	}
	return out[0], out[1], nil
}

// split cuts a codec side's filled bytes into its parts, as the codec
// takes them.
func (dc *decoder) split(j *job, side int, raw []byte) [][]byte {
	parts := dc.parts[side][:0]
	for _, n := range j.fills[side].parts {
		parts, raw = append(parts, raw[:n]), raw[n:]
	}
	dc.parts[side] = parts
	return parts
}

// f32Bytes is vals as the little-endian F32 bytes the kernels read, in
// place.
func f32Bytes(vals []float32) []byte {
	b := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(vals))), 4*len(vals))
	if !littleEndian {
		for i, v := range vals {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
		}
	}
	return b
}
