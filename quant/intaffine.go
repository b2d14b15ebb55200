package quant

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"unsafe"

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
	if codes == 16 && d == tensorfile.F16 && (fill16F16(l, z, s, steps) || l.fill16F16Go(z, s, steps)) {
		return
	}
	zeroScaleLUT(l.vals[:codes], z, s, d)
	if steps {
		for q, v := range l.vals[:codes] {
			l.steps[q] = affineStep(s, v, d)
		}
	}
}

// fill16F16Go is fill16F16's Go loop: roundF16's bits' way without its
// test a code, false (the tables unfilled) unless every product rounds to
// a normal F16 or zero the bits' way. The products (q − z)·s are monotonic
// in q (and exact in float32 for small zeros), so those of codes 0 and 15
// are the largest in magnitude, and a nonzero one is at least |s|.
// 2·2⁻¹¹·|v| is exact: no fusing of the step's multiply-add changes a bit.
func (l *affineLUTs) fill16F16Go(z int32, s float32, steps bool) bool {
	const minNormal, maxRounded = 0x38800000, 0x477FF000 // 2^-14, 65520: as roundF16
	as := math.Float32bits(s) & 0x7FFFFFFF
	first, last := math.Float32bits(float32(-z)*s)&0x7FFFFFFF, math.Float32bits(float32(15-z)*s)&0x7FFFFFFF
	if as != 0 && (as < minNormal || first >= maxRounded || last >= maxRounded) { // NaN and infinite scales among them
		return false
	}
	// Four codes an iteration: Go does not unroll loops, and a table's
	// loop overhead is as much as its codes.
	vals := (*[16]float32)(l.vals[:16])
	for q := range int32(4) {
		v := (*[4]float32)(vals[4*q:])
		c := 4*q - z
		v[0], v[1] = roundF16Normal(float32(c)*s), roundF16Normal(float32(c+1)*s)
		v[2], v[3] = roundF16Normal(float32(c+2)*s), roundF16Normal(float32(c+3)*s)
	}
	if steps {
		as, k := absf(s), 2*unitRoundoff(tensorfile.F16)
		st := (*[16]float32)(l.steps[:16])
		for q := range 4 {
			v, t := (*[4]float32)(vals[4*q:]), (*[4]float32)(st[4*q:])
			t[0], t[1], t[2], t[3] = as+k*absf(v[0]), as+k*absf(v[1]), as+k*absf(v[2]), as+k*absf(v[3])
		}
	}
	return true
}

// roundF16Normal rounds v, whose rounding is a normal F16 or zero, to F16
// (to nearest, ties to even) the bits' way.
func roundF16Normal(v float32) float32 {
	b := math.Float32bits(v)
	b += 0xFFF + (b>>13)&1
	return math.Float32frombits(b &^ 0x1FFF)
}

// unpack4Words writes the codes of n 4-bit words, stride bytes apart from
// qw, low first, through the tables into vals and steps from at, each
// unless nil: the Go loop of unpack4Strided, with the tables' pointers
// and the outputs' bounds hoisted out of the words: once checked here, its
// loops read and write through pointers, since a word's bounds checks cost
// Go about as much as its eight codes. They read a little-endian word a
// byte at a time, two codes a byte (the first in the low nibble): a byte
// load costs less than the shifts and masks of a word's nibbles.
func unpack4Words(vals, steps []float32, at uint64, qw []byte, stride, n uint64, l *affineLUTs) {
	if n == 0 {
		return
	}
	qw = qw[:(n-1)*stride+4]
	switch {
	case steps == nil:
		unpack4Table(vals[at:at+8*n], qw, stride, n, &l.vals)
	case vals == nil:
		unpack4Table(steps[at:at+8*n], qw, stride, n, &l.steps)
	default:
		lv, ls := (*[16]float32)(l.vals[:16]), (*[16]float32)(l.steps[:16])
		v, s := vals[at:at+8*n], steps[at:at+8*n]
		pw, po, pt := unsafe.Pointer(&qw[0]), unsafe.Pointer(&v[0]), unsafe.Pointer(&s[0])
		for k := range uintptr(n) { // the bounds above hold every word and output
			w := (*[4]byte)(unsafe.Add(pw, k*uintptr(stride)))
			o, t := (*[8]float32)(unsafe.Add(po, 32*k)), (*[8]float32)(unsafe.Add(pt, 32*k))
			b0, b1, b2, b3 := w[0], w[1], w[2], w[3]
			o[0], t[0] = lv[b0&0xF], ls[b0&0xF]
			o[1], t[1] = lv[b0>>4], ls[b0>>4]
			o[2], t[2] = lv[b1&0xF], ls[b1&0xF]
			o[3], t[3] = lv[b1>>4], ls[b1>>4]
			o[4], t[4] = lv[b2&0xF], ls[b2&0xF]
			o[5], t[5] = lv[b2>>4], ls[b2>>4]
			o[6], t[6] = lv[b3&0xF], ls[b3&0xF]
			o[7], t[7] = lv[b3>>4], ls[b3>>4]
		}
	}
}

// unpack4Table is unpack4Words into one output through one table.
func unpack4Table(out []float32, qw []byte, stride, n uint64, table *[256]float32) {
	t := (*[16]float32)(table[:16])
	pw, po := unsafe.Pointer(&qw[0]), unsafe.Pointer(&out[0])
	for k := range uintptr(n) { // the caller's bounds hold every word and output
		w := (*[4]byte)(unsafe.Add(pw, k*uintptr(stride)))
		o := (*[8]float32)(unsafe.Add(po, 32*k))
		b0, b1, b2, b3 := w[0], w[1], w[2], w[3]
		o[0], o[1], o[2], o[3] = t[b0&0xF], t[b0>>4], t[b1&0xF], t[b1>>4]
		o[4], o[5], o[6], o[7] = t[b2&0xF], t[b2>>4], t[b3&0xF], t[b3>>4]
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
