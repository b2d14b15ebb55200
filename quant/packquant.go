package quant

import (
	"fmt"

	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// PackQuantized is compressed-tensors' pack-quantized format (int4/int8
// weights of llm-compressor) for a weight of logical Dims [rows, cols]:
//   - weight_packed I32 [rows, ⌈cols/pack⌉]: code c of a row at bit (c mod
//     pack)·bits of word c/pack, stored as q + 2^(bits−1) (pack_to_int32);
//   - weight_scale [rows, groups] (F32, BF16 or F16), groups = ⌈cols/group⌉
//     (one for the channel strategy);
//   - weight_zero_point I32 [⌈rows/pack⌉, groups] when asymmetric, packed
//     along the rows (packed_dim=0) with the same offset;
//   - weight_g_idx I32 [cols] with activation ordering (−1 anywhere means
//     column order, as in forward.py).
//
// value = (q − z) · scale in the scale's dtype, torch's float32 product
// rounded once (vllm-project/compressed-tensors src/compressed_tensors/
// compressors/quantized_compressors/pack_quantized.py unpack_from_int32 at
// 179cba93043885b3b7bcc3b1ecea0793b888ed67, quantization/lifecycle/
// forward.py _dequantize at 01dd1a58d39e47c617df54aaa4519a30273be0c5).
// weight_shape, the logical shape, is a tensor the scheme reads.
type PackQuantized struct {
	bits, pack, group uint64
	asym, gidx        bool
	parts             []Part
}

// PackQuantizedConfig is a config group's weights args.
type PackQuantizedConfig struct {
	Bits       uint64           // num_bits: 2, 4 or 8
	GroupSize  uint64           // group_size; 0 for the channel strategy
	Scale      tensorfile.DType // weight_scale's dtype
	Asymmetric bool             // symmetric: false (then no weight_zero_point)
	GIdx       bool             // a weight_g_idx is stored
}

// NewPackQuantized returns the codec of a pack-quantized weight.
func NewPackQuantized(q PackQuantizedConfig) (*PackQuantized, error) {
	pack, err := packBits("pack-quantized", q.Bits)
	if err != nil {
		return nil, err
	}
	if floatSize(q.Scale) < 2 {
		return nil, fmt.Errorf("pack-quantized: %s scales", q.Scale)
	}
	c := &PackQuantized{bits: q.Bits, pack: pack, group: q.GroupSize, asym: q.Asymmetric, gidx: q.GIdx,
		parts: []Part{{Data, tensorfile.I32}, {Scale, q.Scale}}}
	if q.Asymmetric {
		c.parts = append(c.parts, Part{ZeroPoint, tensorfile.I32})
	}
	if q.GIdx {
		c.parts = append(c.parts, Part{Index, tensorfile.I32})
	}
	return c, nil
}

func (c *PackQuantized) String() string {
	g := "per-channel"
	if c.group != 0 {
		g = fmt.Sprintf("g%d", c.group)
	}
	s := "sym"
	if c.asym {
		s = "asym"
	}
	return fmt.Sprintf("pack-quantized int%d %s %s", c.bits, g, s)
}
func (c *PackQuantized) Parts() []Part { return c.parts }

// Tile is a word of rows when zero points pack rows together.
func (c *PackQuantized) Tile() Tile {
	if c.asym {
		return Tile{Rows: c.pack, Cols: 1}
	}
	return Tile{Rows: 1, Cols: 1}
}

type packGeometry struct {
	group, groups, words uint64 // words a row of weight_packed
	sizes                [4]uint64
}

func (c *PackQuantized) geometry(d Dims) (g packGeometry, err error) {
	g.group = c.group
	if g.group == 0 || g.group > d.Cols {
		g.group = max(d.Cols, 1)
	}
	g.groups, g.words = ceilDiv(d.Cols, g.group), ceilDiv(d.Cols, c.pack)
	var ok [4]bool
	g.sizes[0], ok[0] = mul3(d.Rows, g.words, 4)
	g.sizes[1], ok[1] = mul3(d.Rows, g.groups, floatSize(c.parts[1].DType))
	i := 2
	ok[2], ok[3] = true, true
	if c.asym {
		g.sizes[i], ok[2] = mul3(ceilDiv(d.Rows, c.pack), g.groups, 4)
		i++
	}
	if c.gidx {
		g.sizes[i], ok[3] = mul(d.Cols, 4)
	}
	if _, okv := d.Values(); !okv || !ok[0] || !ok[1] || !ok[2] || !ok[3] {
		return g, fmt.Errorf("%s: %d × %d values overflow", c, d.Rows, d.Cols)
	}
	return g, nil
}

func (c *PackQuantized) Sizes(d Dims, sizes []uint64) error {
	g, err := c.geometry(d)
	if err != nil {
		return err
	}
	if len(sizes) < len(c.parts) {
		return fmt.Errorf("%s: sizes for %d parts, want %d", c, len(sizes), len(c.parts))
	}
	copy(sizes, g.sizes[:len(c.parts)])
	return nil
}

func (c *PackQuantized) Spans(d Dims, r0, r1 uint64, dst []Span) ([]Span, error) {
	g, err := c.geometry(d)
	if err != nil {
		return dst, err
	}
	if err := checkRows(c, d, r0, r1); err != nil {
		return dst, err
	}
	dst = append(dst, rowsSpan(0, r0, r1, g.words*4), rowsSpan(1, r0, r1, g.groups*floatSize(c.parts[1].DType)))
	if c.asym {
		dst = append(dst, rowsSpan(2, r0/c.pack, ceilDiv(r1, c.pack), g.groups*4))
	}
	if c.gidx {
		dst = append(dst, whole(len(c.parts)-1, g.sizes[len(c.parts)-1]))
	}
	return dst, nil
}

func (c *PackQuantized) Decode(d Dims, r0, r1 uint64, parts [][]byte, dst []float32) error {
	return c.decodeRange(d, r0, r1, parts, 0, (r1-r0)*d.Cols, dst, nil)
}

// Steps writes the step of each value of rows [r0, r1): its group's scale
// (see affineStep).
func (c *PackQuantized) Steps(d Dims, r0, r1 uint64, parts [][]byte, dst []float32) error {
	return c.decodeRange(d, r0, r1, parts, 0, (r1-r0)*d.Cols, nil, dst)
}

// DecodeSteps writes the values of rows [r0, r1) into dst and their steps
// into steps, in one pass.
func (c *PackQuantized) DecodeSteps(d Dims, r0, r1 uint64, parts [][]byte, dst, steps []float32) error {
	return c.decodeRange(d, r0, r1, parts, 0, (r1-r0)*d.Cols, dst, steps)
}

// DecodeRange writes values [lo, hi) of rows [r0, r1), counted from row
// r0's first, into dst[:hi-lo] and their steps into steps[:hi-lo] unless
// steps is nil: what DecodeSteps writes there, a piece at a time.
func (c *PackQuantized) DecodeRange(d Dims, r0, r1 uint64, parts [][]byte, lo, hi uint64, dst, steps []float32) error {
	return c.decodeRange(d, r0, r1, parts, lo, hi, dst, steps)
}

// decodeRange writes values [lo, hi) of rows [r0, r1) into vals and their
// steps into steps, each unless nil, from their first.
func (c *PackQuantized) decodeRange(d Dims, r0, r1 uint64, parts [][]byte, lo, hi uint64, vals, steps []float32) error {
	var buf [4]Span
	spans, err := c.Spans(d, r0, r1, buf[:0])
	if err != nil {
		return err
	}
	if err := checkValueRange(c, (r1-r0)*d.Cols, lo, hi, 1); err != nil {
		return err
	}
	if err := checkOutputs(c, spans, parts, vals, steps, hi-lo); err != nil {
		return err
	}
	if lo == hi { // nothing to write; with no columns, the loop would divide by zero
		return nil
	}
	g, _ := c.geometry(d)
	columnOrder := true
	var gidx []byte
	if c.gidx {
		gidx = parts[len(parts)-1]
		if columnOrder, err = groupIndex(c, gidx, d.Cols, g.group, g.groups, true); err != nil {
			return err
		}
	}
	sd, mask := c.parts[1].DType, uint32(1)<<c.bits-1
	half := int32(1) << (c.bits - 1)
	zeroAt := func(r, gi uint64) int32 {
		if !c.asym {
			return half
		}
		return int32(word(parts[2], (r/c.pack-r0/c.pack)*g.groups+gi) >> ((r % c.pack) * c.bits) & mask)
	}
	var luts affineLUTs
	for r := r0 + lo/d.Cols; r < r1 && (r-r0)*d.Cols < hi; r++ {
		base := (r - r0) * d.Cols
		c0, c1 := max(lo, base)-base, min(hi-base, d.Cols)
		row := parts[0][(r-r0)*g.words*4 : (r-r0+1)*g.words*4]
		srow := (r - r0) * g.groups
		at := base - lo // where column 0 of the row goes
		if !columnOrder {
			for col := c0; col < c1; col++ {
				gi := uint64(word(gidx, col))
				q := int32(word(row, col/c.pack) >> ((col % c.pack) * c.bits) & mask)
				z, s := zeroAt(r, gi), floatAt(sd, parts[1], srow+gi)
				if vals != nil {
					vals[at+col] = affineValue(q, z, s, sd, false)
				}
				if steps != nil {
					steps[at+col] = affineValue(q, z, s, sd, true)
				}
			}
			continue
		}
		for gi := c0 / g.group; gi*g.group < c1; gi++ {
			if n := c.wholeGroups4(&luts, r, gi, g, c0, c1, vals, steps, at, row, parts[1][srow*floatSize(sd):], zeroAt); n > 0 {
				gi += n - 1
				continue
			}
			luts.fill(1<<c.bits, zeroAt(r, gi), floatAt(sd, parts[1], srow+gi), sd, vals != nil, steps != nil)
			col, end := max(gi*g.group, c0), min((gi+1)*g.group, c1)
			for ; col < end && col%c.pack != 0; col++ { // a group that does not start on a word
				luts.one(vals, steps, at+col, word(row, col/c.pack)>>((col%c.pack)*c.bits)&mask)
			}
			k0, k1 := col/c.pack, end/c.pack // the whole words from col
			if k1 > k0 {
				if c.bits == 4 {
					k0 += unpack4Strided(vals, steps, at+k0*c.pack, row[4*k0:], 4, k1-k0, &luts)
					unpack4Words(vals, steps, at+k0*c.pack, row[4*k0:], 4, k1-k0, &luts)
					k0 = k1
				}
				for k := k0; k < k1; k++ {
					luts.unpack(vals, steps, at+k*c.pack, word(row, k), c.bits, c.pack)
				}
				col = k1 * c.pack
			}
			for ; col < end; col++ { // nor end on one
				luts.one(vals, steps, at+col, word(row, col/c.pack)>>((col%c.pack)*c.bits)&mask)
			}
		}
	}
	return nil
}

// wholeGroups4 decodes, for 4-bit codes, the groups of row r from gi on
// that lie whole in columns [c0, c1) and start on a word through the
// vector loops (row is the row's words, scales its scales), vals and steps
// from at: how many it did (none when it cannot, the caller's loops then
// do group gi).
func (c *PackQuantized) wholeGroups4(luts *affineLUTs, r, gi uint64, g packGeometry, c0, c1 uint64, vals, steps []float32, at uint64,
	row, scales []byte, zeroAt func(r, gi uint64) int32) uint64 {
	if c.bits != 4 || vals == nil || g.group%c.pack != 0 || gi*g.group < c0 || (gi+1)*g.group > c1 || !hasAVX2() { // no zeros and scales gathered for nothing
		return 0
	}
	var zs [32]int32
	var ss [32]float32
	sd := c.parts[1].DType
	m := min((c1-gi*g.group)/g.group, uint64(len(zs)))
	for i := range m {
		zs[i], ss[i] = zeroAt(r, gi+i), floatAt(sd, scales, gi+i)
	}
	words := g.group / c.pack
	return unpack4Groups(vals, steps, at+gi*g.group, row[4*gi*words:], 4, words, zs[:m], ss[:m], sd, luts)
}
