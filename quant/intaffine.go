package quant

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// Helpers of the integer group-affine codecs (GPTQ, AWQ, compressed-tensors
// pack-quantized, MLX): values of bits ∈ {2, 4, 8} packed 32/bits to a
// little-endian 32-bit word, the first in the low bits, and a table per
// group that maps each of the 2^bits codes to its value, so that the inner
// loops are a shift, a mask and a load.

// packBits checks bits and returns the values a word holds.
func packBits(what string, bits uint64) (uint64, error) {
	switch bits {
	case 2, 4, 8:
		return 32 / bits, nil
	}
	return 0, fmt.Errorf("%s: %d-bit values are not decoded (2, 4 and 8 are)", what, bits)
}

// word is the little-endian 32-bit word i of b.
func word(b []byte, i uint64) uint32 { return binary.LittleEndian.Uint32(b[4*i:]) }

// zeroScaleLUT fills lut[q] = round_d(float32(q − z) · s): torch's (q − z) *
// scale with integer codes and a scale of dtype d, computed in float32 and
// stored in d (the product of a small integer and a 16-bit scale is exact
// in float32, so the store is the only rounding).
func zeroScaleLUT(lut []float32, z int32, s float32, d tensorfile.DType) {
	for q := range lut {
		lut[q] = roundTo(d, float32(int32(q)-z)*s)
	}
}

// ErrIndex is wrapped by the error of a g_idx naming no group: a fault in
// the data, not in its size.
var ErrIndex = errors.New("group index out of range")

// groupIndex checks a g_idx part (I32, one group a column) against groups,
// and reports whether it is the column order c/group, which the codecs
// decode word by word. minusOne says that any −1 means column order
// (compressed-tensors' "g_idx is None or -1 in g_idx").
func groupIndex(what fmt.Stringer, b []byte, cols, group, groups uint64, minusOne bool) (columnOrder bool, err error) {
	b = b[:4*cols]
	if inColumnOrder(b, group) {
		return true, nil // every entry c/group < groups: nothing to reject, no −1 to find
	}
	columnOrder = true
	var want, left uint64 = 0, group // c/group, counted: no division a column
	for c := range cols {
		g := int32(binary.LittleEndian.Uint32(b[4*c:]))
		if g == -1 && minusOne {
			return true, nil
		}
		if g < 0 || uint64(g) >= groups {
			return false, fmt.Errorf("%s: g_idx[%d] = %d, not a group of %d: %w", what, c, g, groups, ErrIndex)
		}
		if left == 0 {
			want, left = want+1, group
		}
		left--
		columnOrder = columnOrder && uint64(g) == want
	}
	return columnOrder, nil
}

// inColumnOrder reports whether the g_idx b (I32, whole) is c/group for
// every column c: the layout of desc_act=false exports, checked on every
// range a codec decodes. A group's run holds one value when it equals
// itself shifted by an entry, which bytes.Equal checks at memory speed.
func inColumnOrder(b []byte, group uint64) bool {
	if group == 0 {
		return false
	}
	for g := uint64(0); len(b) > 0; g++ {
		run := b[:4*min(group, uint64(len(b))/4)]
		if uint64(binary.LittleEndian.Uint32(run)) != g || !bytes.Equal(run[4:], run[:len(run)-4]) {
			return false
		}
		b = b[len(run):]
	}
	return true
}

// unpack4 writes the eight 4-bit codes of w, low first, through lut.
func unpack4(out []float32, w uint32, lut *[256]float32) {
	out = out[:8:8]
	out[0], out[1] = lut[w&0xF], lut[w>>4&0xF]
	out[2], out[3] = lut[w>>8&0xF], lut[w>>12&0xF]
	out[4], out[5] = lut[w>>16&0xF], lut[w>>20&0xF]
	out[6], out[7] = lut[w>>24&0xF], lut[w>>28]
}

// unpackWord writes the pack codes of bits bits of w, low first, through
// lut.
func unpackWord(out []float32, w uint32, bits, pack uint64, lut *[256]float32) {
	if bits == 4 {
		unpack4(out, w, lut)
		return
	}
	mask := uint32(1)<<bits - 1
	for j := range pack {
		out[j] = lut[w>>(j*bits)&mask]
	}
}

// Steps of the integer codecs (values.Stepper): the grid (q − z)·s is
// uniform, its spacing the group's scale; the product's store in a 16-bit
// dtype rounds once more, and the step is widened by twice that.

// affineLUTs are a group's tables: each code's value and its step.
type affineLUTs struct{ vals, steps [256]float32 }

// fill fills the first codes entries of the tables asked for, for zero z
// and scale s of dtype d.
func (l *affineLUTs) fill(codes int, z int32, s float32, d tensorfile.DType, vals, steps bool) {
	if codes == 16 && d == tensorfile.F16 && fill16F16(l, z, s, steps) {
		return
	}
	zeroScaleLUT(l.vals[:codes], z, s, d)
	if steps {
		for q, v := range l.vals[:codes] {
			l.steps[q] = affineStep(s, v, d)
		}
	}
}

// unpack writes the codes of w through the tables into vals and steps at
// i, each unless nil: 4-bit words, the common case, inline.
func (l *affineLUTs) unpack(vals, steps []float32, i uint64, w uint32, bits, pack uint64) {
	if bits != 4 {
		if vals != nil {
			unpackWord(vals[i:], w, bits, pack, &l.vals)
		}
		if steps != nil {
			unpackWord(steps[i:], w, bits, pack, &l.steps)
		}
		return
	}
	if vals != nil {
		unpack4(vals[i:], w, &l.vals)
	}
	if steps != nil {
		unpack4(steps[i:], w, &l.steps)
	}
}

// one writes code q's value and step through the tables into vals and
// steps at i, each unless nil.
func (l *affineLUTs) one(vals, steps []float32, i uint64, q uint32) {
	if vals != nil {
		vals[i] = l.vals[q]
	}
	if steps != nil {
		steps[i] = l.steps[q]
	}
}

// checkOutputs is checkParts for a decode into values, steps or both (nil
// for one not wanted).
func checkOutputs(c Codec, spans []Span, parts [][]byte, vals, steps []float32, n uint64) error {
	if vals == nil && steps == nil {
		return checkParts(c, spans, parts, nil, n)
	}
	for _, out := range [2][]float32{vals, steps} {
		if out != nil {
			if err := checkParts(c, spans, parts, out, n); err != nil {
				return err
			}
		}
	}
	return nil
}

// affineValue is one code's value (q − z)·s stored in d or, when steps,
// its step.
func affineValue(q, z int32, s float32, d tensorfile.DType, steps bool) float32 {
	v := roundTo(d, float32(q-z)*s)
	if steps {
		return affineStep(s, v, d)
	}
	return v
}

// affineStep is the step of a value v of a grid of spacing s stored in d.
func affineStep(s, v float32, d tensorfile.DType) float32 {
	return absf(s) + 2*unitRoundoff(d)*absf(v)
}
