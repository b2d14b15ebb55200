package quant

import (
	"fmt"
	"math/bits"

	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// GPTQ is the packed layout of AutoGPTQ / GPTQModel (and optimum, vLLM's
// gptq kernels): for a Linear weight of logical Dims [out, in],
//   - qweight I32 [in/pack, out]: word [k, o] holds input columns k·pack + j
//     of row o at bit j·bits (pack = 32/bits);
//   - scales [groups, out] (F16, or BF16), groups = ⌈in/group⌉;
//   - qzeros I32 [groups, out/pack]: word [g, w] holds the zero of row
//     w·pack + j at bit j·bits, stored minus one in the v1 format (the
//     dequantizer adds 1 after masking);
//   - g_idx I32 [in], the group of each input column (act-order permutes it).
//
// value = scales[g, o] · (q − (zero + offset)) with g = g_idx[c], computed as
// torch does: an integer difference times an F16 scale, in float32, stored
// in the scale's dtype (AutoGPTQ/AutoGPTQ auto_gptq/nn_modules/qlinear/
// qlinear_cuda_old.py forward at 179776bd1d97a2e7f84b72318630f43719647a11:
// zeros = (qzeros >> wf) & mask; zeros = zeros + 1; weight = scales *
// (weight - zeros), and scales[g_idx] * (weight - zeros[g_idx]) with g_idx).
// The logical weight is the transpose of qweight's unpacked [in, out].
type GPTQ struct {
	bits, pack, group uint64
	offset            int32
	parts             []Part
}

// GPTQConfig is a GPTQ quantize_config.
type GPTQConfig struct {
	Bits       uint64           // bits: 2, 4 or 8
	GroupSize  uint64           // group_size; 0 (−1 in the config) is one group
	Scale      tensorfile.DType // the scales' dtype
	ZeroOffset int32            // 1 for checkpoint_format "gptq" (v1), 0 for "gptq_v2"
	GIdx       bool             // a g_idx tensor is stored
}

// NewGPTQ returns the codec of a GPTQ config.
func NewGPTQ(q GPTQConfig) (*GPTQ, error) {
	pack, err := packBits("gptq", q.Bits)
	if err != nil {
		return nil, err
	}
	if floatSize(q.Scale) < 2 {
		return nil, fmt.Errorf("gptq: %s scales", q.Scale)
	}
	c := &GPTQ{bits: q.Bits, pack: pack, group: q.GroupSize, offset: q.ZeroOffset,
		parts: []Part{{Data, tensorfile.I32}, {Scale, q.Scale}, {ZeroPoint, tensorfile.I32}}}
	if q.GIdx {
		c.parts = append(c.parts, Part{Index, tensorfile.I32})
	}
	return c, nil
}

func (c *GPTQ) String() string {
	g := "per-channel"
	if c.group != 0 {
		g = fmt.Sprintf("g%d", c.group)
	}
	return fmt.Sprintf("GPTQ int%d %s", c.bits, g)
}
func (c *GPTQ) Parts() []Part { return c.parts }
func (c *GPTQ) Tile() Tile    { return Tile{Rows: c.pack, Cols: c.pack} }

// gptqGeometry is a GPTQ weight's groups and part sizes.
type gptqGeometry struct {
	group, groups uint64
	sizes         [4]uint64
}

func (c *GPTQ) geometry(d Dims) (g gptqGeometry, err error) {
	if d.Cols == 0 || d.Cols%c.pack != 0 || d.Rows%c.pack != 0 {
		return g, fmt.Errorf("%s: %d × %d is not whole %d-value words in both dimensions", c, d.Rows, d.Cols, c.pack)
	}
	g.group = c.group
	if g.group == 0 || g.group > d.Cols {
		g.group = d.Cols
	}
	g.groups = ceilDiv(d.Cols, g.group)
	es := floatSize(c.parts[1].DType)
	var ok [4]bool
	g.sizes[0], ok[0] = mul3(d.Cols/c.pack, d.Rows, 4)
	g.sizes[1], ok[1] = mul3(g.groups, d.Rows, es)
	g.sizes[2], ok[2] = mul3(g.groups, d.Rows/c.pack, 4)
	g.sizes[3], ok[3] = mul(d.Cols, 4)
	if _, okv := d.Values(); !okv || !ok[0] || !ok[1] || !ok[2] || !ok[3] {
		return g, fmt.Errorf("%s: %d × %d values overflow", c, d.Rows, d.Cols)
	}
	return g, nil
}

func (c *GPTQ) Sizes(d Dims, sizes []uint64) error {
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

func (c *GPTQ) Spans(d Dims, r0, r1 uint64, dst []Span) ([]Span, error) {
	g, err := c.geometry(d)
	if err != nil {
		return dst, err
	}
	if err := checkRows(c, d, r0, r1); err != nil {
		return dst, err
	}
	es := floatSize(c.parts[1].DType)
	dst = append(dst, colsSpan(0, r0, r1, d.Cols/c.pack, d.Rows*4, 4),
		colsSpan(1, r0, r1, g.groups, d.Rows*es, es),
		colsSpan(2, r0/c.pack, r1/c.pack, g.groups, d.Rows/c.pack*4, 4))
	if len(c.parts) == 4 {
		dst = append(dst, whole(3, g.sizes[3]))
	}
	return dst, nil
}

func (c *GPTQ) Decode(d Dims, r0, r1 uint64, parts [][]byte, dst []float32) error {
	return c.decode(d, r0, r1, parts, dst, nil)
}

// Steps writes the step of each value of rows [r0, r1): its group's scale
// (see affineStep).
func (c *GPTQ) Steps(d Dims, r0, r1 uint64, parts [][]byte, dst []float32) error {
	return c.decode(d, r0, r1, parts, nil, dst)
}

// DecodeSteps writes the values of rows [r0, r1) into dst and their steps
// into steps, in one pass.
func (c *GPTQ) DecodeSteps(d Dims, r0, r1 uint64, parts [][]byte, dst, steps []float32) error {
	return c.decode(d, r0, r1, parts, dst, steps)
}

// DecodeRange writes values [lo, hi) of rows [r0, r1), counted from row
// r0's first (whole words: multiples of the pack), into dst[:hi-lo] and
// their steps into steps[:hi-lo] unless steps is nil: what DecodeSteps
// writes there, a piece at a time.
func (c *GPTQ) DecodeRange(d Dims, r0, r1 uint64, parts [][]byte, lo, hi uint64, dst, steps []float32) error {
	return c.decodeRange(d, r0, r1, parts, lo, hi, dst, steps)
}

// decode writes the values of rows [r0, r1) into vals and their steps into
// steps, each unless nil.
func (c *GPTQ) decode(d Dims, r0, r1 uint64, parts [][]byte, vals, steps []float32) error {
	return c.decodeRange(d, r0, r1, parts, 0, (r1-r0)*d.Cols, vals, steps) // Spans checks the rows first
}

// decodeRange is decode of values [lo, hi) of the rows, into vals and
// steps from their first.
func (c *GPTQ) decodeRange(d Dims, r0, r1 uint64, parts [][]byte, lo, hi uint64, vals, steps []float32) error {
	var buf [4]Span
	spans, err := c.Spans(d, r0, r1, buf[:0])
	if err != nil {
		return err
	}
	if err := checkValueRange(c, (r1-r0)*d.Cols, lo, hi, c.pack); err != nil {
		return err
	}
	if err := checkOutputs(c, spans, parts, vals, steps, hi-lo); err != nil {
		return err
	}
	g, _ := c.geometry(d)
	columnOrder := true
	if len(c.parts) == 4 {
		if columnOrder, err = groupIndex(c, parts[3], d.Cols, g.group, g.groups, false); err != nil {
			return err
		}
	}
	sd, nr, mask := c.parts[1].DType, r1-r0, uint32(1)<<c.bits-1
	qw, scales, zeros := parts[0], parts[1], parts[2]
	// A pack is a power of two: a group's words and zero are found by
	// shifts, not by the divisions that cost a group as much as its table.
	ps, zw := uint(bits.TrailingZeros64(c.pack)), nr/c.pack
	zeroAt := func(gi, o uint64) int32 {
		z := word(zeros, gi*zw+o>>ps) >> ((o & (c.pack - 1)) * c.bits) & mask
		return int32(z) + c.offset
	}
	vector := c.bits == 4 && vals != nil && hasAVX2() // wholeGroups4 can
	var luts affineLUTs
	for o := lo / d.Cols; o < nr && o*d.Cols < hi; o++ {
		row := o * d.Cols
		c0, c1 := max(lo, row)-row, min(hi-row, d.Cols)
		if columnOrder && g.group%c.pack == 0 {
			for gi := c0 / g.group; gi*g.group < c1; gi++ {
				if vector { // the call and its arguments would cost the Go loops' every group
					if n := c.wholeGroups4(&luts, gi, o, nr, max(c0, gi*g.group) == gi*g.group, min((gi+1)*g.group, c1) == (gi+1)*g.group,
						(c1-gi*g.group)/g.group, g.group/c.pack, vals, steps, row+gi*g.group-lo, qw, scales, zeroAt); n > 0 {
						gi += n - 1
						continue
					}
				}
				luts.fill(1<<c.bits, zeroAt(gi, o), floatAt(sd, scales, gi*nr+o), sd, vals != nil, steps != nil)
				k0, k1 := max(gi*g.group, c0)>>ps, min((gi+1)*g.group, c1)>>ps
				if c.bits == 4 && k1 > k0 {
					k0 += unpack4Strided(vals, steps, row+k0*c.pack-lo, qw[4*(k0*nr+o):], 4*nr, k1-k0, &luts)
					if k1 > k0 {
						unpack4Words(vals, steps, row+k0*c.pack-lo, qw[4*(k0*nr+o):], 4*nr, k1-k0, &luts)
					}
					continue
				}
				for k := k0; k < k1; k++ {
					luts.unpack(vals, steps, row+k*c.pack-lo, word(qw, k*nr+o), c.bits, c.pack)
				}
			}
			continue
		}
		for col := c0; col < c1; col++ {
			gi := col / g.group
			if !columnOrder {
				gi = uint64(word(parts[3], col))
			}
			q := int32(word(qw, (col/c.pack)*nr+o) >> ((col % c.pack) * c.bits) & mask)
			s := floatAt(sd, scales, gi*nr+o)
			v := roundTo(sd, float32(q-zeroAt(gi, o))*s)
			if vals != nil {
				vals[row+col-lo] = v
			}
			if steps != nil {
				steps[row+col-lo] = affineStep(s, v, sd)
			}
		}
	}
	return nil
}

// wholeGroups4 decodes, for 4-bit codes (and F16 or BF16 scales), groups gi on of
// row o while they are whole (first and last say that group gi is, left
// counts the whole groups from gi) through the vector loops, vals and
// steps from at: how many it did (none when it cannot, the caller's loops
// then do group gi).
func (c *GPTQ) wholeGroups4(luts *affineLUTs, gi, o, nr uint64, first, last bool, left, words uint64, vals, steps []float32, at uint64,
	qw, scales []byte, zeroAt func(gi, o uint64) int32) uint64 {
	sd := c.parts[1].DType
	if c.bits != 4 || vals == nil || !first || !last || left == 0 || !hasAVX2() { // no zeros and scales gathered for nothing
		return 0
	}
	var zs [32]int32
	var ss [32]float32
	m := min(left, uint64(len(zs)))
	for i := range m {
		zs[i], ss[i] = zeroAt(gi+i, o), floatAt(sd, scales, (gi+i)*nr+o)
	}
	return unpack4Groups(vals, steps, at, qw[4*(gi*words*nr+o):], 4*nr, words, zs[:m], ss[:m], sd, luts)
}
