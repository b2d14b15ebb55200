package quant

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"

	"github.com/ckptcheck/ckptcheck/tensorfile"
	"github.com/x448/float16"
)

// Helpers the quantized codecs share: overflow-checked geometry, reading a
// scale of any float dtype, rounding a float32 product to the dtype an
// upstream dequantizer stores it in, and checking that the bytes a Decode
// call got are the ones its Spans name.

// maxCodecParts bounds the parts of any codec here (carried parts included).
const maxCodecParts = 8

// mul is a·b, ok false on overflow.
func mul(a, b uint64) (uint64, bool) {
	hi, lo := bits.Mul64(a, b)
	return lo, hi == 0
}

// mul3 is a·b·c, ok false on overflow.
func mul3(a, b, c uint64) (uint64, bool) {
	ab, ok1 := mul(a, b)
	abc, ok2 := mul(ab, c)
	return abc, ok1 && ok2
}

// ceilDiv is ⌈a/b⌉ without overflow; b must not be 0.
func ceilDiv(a, b uint64) uint64 {
	q := a / b
	if a%b != 0 {
		q++
	}
	return q
}

// floatSize is the byte size of a scale dtype the codecs read, 0 for others.
func floatSize(d tensorfile.DType) uint64 {
	switch d {
	case tensorfile.F32:
		return 4
	case tensorfile.BF16, tensorfile.F16:
		return 2
	case tensorfile.F8_E4M3:
		return 1
	}
	return 0
}

// floatAt is element i of b, an array of d (see floatSize).
func floatAt(d tensorfile.DType, b []byte, i uint64) float32 {
	switch d {
	case tensorfile.F32:
		return math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	case tensorfile.BF16:
		return math.Float32frombits(uint32(binary.LittleEndian.Uint16(b[2*i:])) << 16)
	case tensorfile.F16:
		return f16Table()[binary.LittleEndian.Uint16(b[2*i:])]
	case tensorfile.F8_E4M3:
		return f8Tables()[tensorfile.F8_E4M3][b[i]]
	}
	return float32(math.NaN())
}

// roundTo rounds v to d (BF16, F16; F32 is v itself), to nearest even as
// torch's casts do: the value of a product torch computes in float32 and
// stores in a half-precision tensor.
func roundTo(d tensorfile.DType, v float32) float32 {
	switch d {
	case tensorfile.BF16:
		return roundBF16(v)
	case tensorfile.F16:
		return roundF16(v)
	}
	return v
}

// roundF16 is IEEE round to nearest even to F16 (x448/float16), kept out of
// roundTo so that roundTo inlines. Zero and values that round to a normal
// F16 take the bits' way, as roundBF16 does with 13 bits dropped; the
// others (subnormals, overflow, NaN) go through the conversion.
func roundF16(v float32) float32 {
	b := math.Float32bits(v)
	if a := b & 0x7FFFFFFF; a == 0 || (a >= 0x38800000 && a < 0x477FF000) { // 2^-14, 65520
		b += 0xFFF + (b>>13)&1
		return math.Float32frombits(b &^ 0x1FFF)
	}
	return f16Table()[float16.Fromfloat32(v).Bits()]
}

// roundBF16 is c10::BFloat16's round_to_nearest_even.
func roundBF16(v float32) float32 {
	b := math.Float32bits(v)
	if b&0x7FFFFFFF > 0x7F800000 {
		return math.Float32frombits(0x7FC00000)
	}
	b += 0x7FFF + (b>>16)&1
	return math.Float32frombits(b &^ 0xFFFF)
}

// checkRows is CheckRange with the codec's name on the error.
func checkRows(c Codec, d Dims, r0, r1 uint64) error {
	if err := CheckRange(c.Tile(), d, r0, r1); err != nil {
		return fmt.Errorf("%s: %w", c, err)
	}
	return nil
}

// checkValueRange checks a range [lo, hi) of the n values of the rows a
// DecodeRange decodes: within them, lo a multiple of align, and hi one too
// unless it is n.
func checkValueRange(c Codec, n, lo, hi, align uint64) error {
	if lo > hi || hi > n || lo%align != 0 || (hi%align != 0 && hi != n) {
		return fmt.Errorf("%s: values [%d, %d) of %d are no range of whole %d-value pieces", c, lo, hi, n, align)
	}
	return nil
}

// checkParts verifies that parts holds, part by part, at least the bytes
// spans name, and that dst holds n values: what every Decode checks before
// its loop indexes without bounds worries.
func checkParts(c Codec, spans []Span, parts [][]byte, dst []float32, n uint64) error {
	np := len(c.Parts())
	if len(parts) != np {
		return fmt.Errorf("%s: %d parts, want %d", c, len(parts), np)
	}
	var need [maxCodecParts]uint64
	for _, s := range spans {
		size, ok := s.Size()
		sum, c2 := bits.Add64(need[s.Part], size, 0)
		if !ok || c2 != 0 {
			return fmt.Errorf("%s: span %+v overflows", c, s)
		}
		need[s.Part] = sum
	}
	for i := range np {
		if need[i] > uint64(len(parts[i])) {
			return fmt.Errorf("%s: part %d (%s) has %d bytes, the rows need %d", c, i, c.Parts()[i].Role, len(parts[i]), need[i])
		}
	}
	if n > uint64(len(dst)) {
		return fmt.Errorf("%s: the rows are %d values, the output holds %d", c, n, len(dst))
	}
	return nil
}

// whole is the span of all of a part's size bytes.
func whole(part int, size uint64) Span { return Span{Part: part, Len: size, Count: 1} }

// rowsSpan is the span of rows [r0, r1) of a row-major part of rowBytes a
// row.
func rowsSpan(part int, r0, r1, rowBytes uint64) Span {
	return Span{Part: part, Offset: r0 * rowBytes, Len: (r1 - r0) * rowBytes, Count: 1}
}

// colsSpan is columns [c0, c1) of every one of rows rows of a row-major part
// of rowBytes a row, elem bytes an element: how a part stored transposed
// against the logical rows is read.
func colsSpan(part int, c0, c1, rows, rowBytes, elem uint64) Span {
	return Span{Part: part, Offset: c0 * elem, Len: (c1 - c0) * elem, Stride: rowBytes, Count: rows}
}
