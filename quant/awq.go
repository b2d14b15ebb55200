package quant

import (
	"encoding/binary"
	"fmt"

	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// AWQ is AutoAWQ's GEMM layout (WQLinear_GEMM) of a 4-bit Linear weight of
// logical Dims [out, in]:
//   - qweight I32 [in, out/8]: word [c, w] holds rows w·8 + j of column c
//     in AWQ's interleaved order, row j at nibble AWQ_REVERSE_ORDER[j] =
//     [0, 4, 1, 5, 2, 6, 3, 7][j] (packed in order [0, 2, 4, 6, 1, 3, 5, 7]);
//   - qzeros I32 [in/group, out/8], packed the same way, with no offset;
//   - scales [in/group, out] (F16).
//
// value = (q − z) · scale in float32, stored in the scale's dtype
// (casper-hansen/AutoAWQ awq/utils/packing_utils.py dequantize_gemm at
// 7ee28736ab85f95724eeab2598bf49b13b86439f: unpack_awq, reverse_awq_order,
// (iweight - izeros) * scales). The logical weight is the transpose of
// dequantize_gemm's [in, out].
type AWQ struct {
	group uint64
	parts []Part
}

// awqNibble is the nibble of row j of a word: AWQ_REVERSE_ORDER.
var awqNibble = [8]uint32{0, 4, 1, 5, 2, 6, 3, 7}

// NewAWQ returns the codec of 4-bit AWQ GEMM with groups of group input
// columns and scales of dtype scale.
func NewAWQ(group uint64, scale tensorfile.DType) (*AWQ, error) {
	if group == 0 || floatSize(scale) < 2 {
		return nil, fmt.Errorf("awq: group %d, %s scales", group, scale)
	}
	return &AWQ{group, []Part{{Data, tensorfile.I32}, {Scale, scale}, {ZeroPoint, tensorfile.I32}}}, nil
}

func (c *AWQ) String() string { return fmt.Sprintf("AWQ int4 g%d", c.group) }
func (c *AWQ) Parts() []Part  { return c.parts }
func (c *AWQ) Tile() Tile     { return Tile{Rows: 8, Cols: c.group} }

func (c *AWQ) geometry(d Dims) (groups uint64, sizes [3]uint64, err error) {
	if d.Cols == 0 || d.Cols%c.group != 0 || d.Rows%8 != 0 {
		return 0, sizes, fmt.Errorf("%s: %d × %d is not whole groups of %d columns and words of 8 rows", c, d.Rows, d.Cols, c.group)
	}
	groups = d.Cols / c.group
	var ok [3]bool
	sizes[0], ok[0] = mul3(d.Cols, d.Rows/8, 4)
	sizes[1], ok[1] = mul3(groups, d.Rows, floatSize(c.parts[1].DType))
	sizes[2], ok[2] = mul3(groups, d.Rows/8, 4)
	if _, okv := d.Values(); !okv || !ok[0] || !ok[1] || !ok[2] {
		return 0, sizes, fmt.Errorf("%s: %d × %d values overflow", c, d.Rows, d.Cols)
	}
	return groups, sizes, nil
}

func (c *AWQ) Sizes(d Dims, sizes []uint64) error {
	_, s, err := c.geometry(d)
	if err != nil {
		return err
	}
	if len(sizes) < 3 {
		return fmt.Errorf("%s: sizes for %d parts, want 3", c, len(sizes))
	}
	copy(sizes, s[:])
	return nil
}

func (c *AWQ) Spans(d Dims, r0, r1 uint64, dst []Span) ([]Span, error) {
	groups, _, err := c.geometry(d)
	if err != nil {
		return dst, err
	}
	if err := checkRows(c, d, r0, r1); err != nil {
		return dst, err
	}
	es := floatSize(c.parts[1].DType)
	return append(dst, colsSpan(0, r0/8, r1/8, d.Cols, d.Rows/8*4, 4),
		colsSpan(1, r0, r1, groups, d.Rows*es, es),
		colsSpan(2, r0/8, r1/8, groups, d.Rows/8*4, 4)), nil
}

func (c *AWQ) Decode(d Dims, r0, r1 uint64, parts [][]byte, dst []float32) error {
	return c.decodeRange(d, r0, r1, parts, 0, (r1-r0)*d.Cols, dst, nil)
}

// Steps writes the step of each value of rows [r0, r1): its group's scale
// (see affineStep).
func (c *AWQ) Steps(d Dims, r0, r1 uint64, parts [][]byte, dst []float32) error {
	return c.decodeRange(d, r0, r1, parts, 0, (r1-r0)*d.Cols, nil, dst)
}

// DecodeSteps writes the values of rows [r0, r1) into dst and their steps
// into steps, in one pass.
func (c *AWQ) DecodeSteps(d Dims, r0, r1 uint64, parts [][]byte, dst, steps []float32) error {
	return c.decodeRange(d, r0, r1, parts, 0, (r1-r0)*d.Cols, dst, steps)
}

// DecodeRange writes values [lo, hi) of rows [r0, r1), counted from row
// r0's first (whole groups), into dst[:hi-lo] and their steps into
// steps[:hi-lo] unless steps is nil: what DecodeSteps writes there, a
// piece at a time.
func (c *AWQ) DecodeRange(d Dims, r0, r1 uint64, parts [][]byte, lo, hi uint64, dst, steps []float32) error {
	return c.decodeRange(d, r0, r1, parts, lo, hi, dst, steps)
}

// decodeRange writes values [lo, hi) of rows [r0, r1) into vals and their
// steps into steps, each unless nil, from their first. A word holds eight
// rows of a column: a group of the eight rows a word holds (each row's
// tables filled) is decoded eight columns at a time, the rows the range
// holds.
func (c *AWQ) decodeRange(d Dims, r0, r1 uint64, parts [][]byte, lo, hi uint64, vals, steps []float32) error {
	var buf [3]Span
	spans, err := c.Spans(d, r0, r1, buf[:0])
	if err != nil {
		return err
	}
	if err := checkValueRange(c, (r1-r0)*d.Cols, lo, hi, c.group); err != nil {
		return err
	}
	if err := checkOutputs(c, spans, parts, vals, steps, hi-lo); err != nil {
		return err
	}
	groups := d.Cols / c.group
	sd, nr := c.parts[1].DType, r1-r0
	nw := nr / 8
	qw, scales, zeros := parts[0], parts[1], parts[2]
	var luts [8]affineLUTs
	if lo == hi {
		return nil
	}
	// Group by group, and in it word by word: the words of a column's
	// rows are contiguous, so a group's columns stay in the cache while
	// its rows are done.
	w0, w1 := lo/d.Cols/8, min((hi-1)/d.Cols/8+1, nw)
	for g := range groups {
		for w := w0; w < w1; w++ {
			// the rows of the word whose group g lies in the range (whole:
			// the range's ends are whole groups)
			var in [8]bool
			any := false
			for j := range uint64(8) {
				first := (8*w+j)*d.Cols + g*c.group
				in[j] = first >= lo && first < hi
				any = any || in[j]
			}
			if !any {
				continue
			}
			zw := word(zeros, g*nw+w)
			for j := range uint64(8) {
				if in[j] {
					luts[j].fill(16, int32(zw>>(4*awqNibble[j])&0xF), floatAt(sd, scales, g*nr+w*8+j), sd, vals != nil, steps != nil)
				}
			}
			at := 8*w*d.Cols + g*c.group - lo // where the group's first value of the word's first row goes
			col := g * c.group
			col += awqRows8(vals, steps, at, d.Cols, qw[4*(col*nw+w):], 4*nw, c.group, &luts, &in)
			if n := (g+1)*c.group - col; n > 0 {
				for j := range uint64(8) {
					if in[j] {
						// Row j's code is at nibble awqNibble[j] = [0, 4, 1, 5, 2, 6, 3, 7][j].
						o := at + j*d.Cols + col - g*c.group
						var vs, ss []float32
						if vals != nil {
							vs = vals[o : o+n]
						}
						if steps != nil {
							ss = steps[o : o+n]
						}
						awqRow(vs, ss, qw[4*(col*nw+w):], 4*nw, n, uint32(4*awqNibble[j]), &luts[j])
					}
				}
			}
		}
	}
	return nil
}

// awqRow writes row's codes at bit shift of n words, stride bytes apart
// from qw, through the row's tables into vals and steps (n each, unless
// nil): one row of an AWQ group, the words read again for each row (they
// stay in the cache) so that the stores run along the row.
func awqRow(vals, steps []float32, qw []byte, stride, n uint64, shift uint32, l *affineLUTs) {
	qw = qw[:(n-1)*stride+4]
	lv, ls := &l.vals, &l.steps
	switch {
	case steps == nil:
		for k := range vals {
			vals[k] = lv[binary.LittleEndian.Uint32(qw[uint64(k)*stride:])>>shift&0xF]
		}
	case vals == nil:
		for k := range steps {
			steps[k] = ls[binary.LittleEndian.Uint32(qw[uint64(k)*stride:])>>shift&0xF]
		}
	default:
		steps = steps[:len(vals)]
		for k := range vals {
			q := binary.LittleEndian.Uint32(qw[uint64(k)*stride:]) >> shift & 0xF
			vals[k], steps[k] = lv[q], ls[q]
		}
	}
}
