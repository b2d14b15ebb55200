package quant

import (
	"encoding/binary"
	"math"
	"sync"

	"github.com/x448/float16"

	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// Decoding: how each dtype's little-endian bytes become numbers. Floating
// dtypes decode to float64 exactly (every value of every dtype here is a
// float64); F4 and the F6 types are not decoded and compare bit for bit.

// DecodeFloat64 decodes the elements in src, which must hold whole
// elements of d, into dst (d.Lanes() values per element) and returns how
// many values it wrote. Integers above 2^53 round to the nearest float64.
func DecodeFloat64(d tensorfile.DType, src []byte, dst []float64) int {
	size := d.Bits() / 8
	n := min(len(src)/max(size, 1), len(dst)/d.Lanes())
	switch d {
	case tensorfile.BF16:
		// The hot decode of fine-tune comparisons: eight values an
		// instruction where the CPU has them, else four a word.
		src, dst := src[:2*n], dst[:n]
		i := widen(d, src, dst, n)
		for ; i+4 <= n; i += 4 {
			w := binary.LittleEndian.Uint64(src[2*i:])
			d := dst[i : i+4 : i+4]
			d[0] = float64(math.Float32frombits(uint32(w) << 16))
			d[1] = float64(math.Float32frombits(uint32(w) & 0xFFFF0000))
			d[2] = float64(math.Float32frombits(uint32(w>>16) & 0xFFFF0000))
			d[3] = float64(math.Float32frombits(uint32(w>>32) & 0xFFFF0000))
		}
		for ; i < n; i++ {
			dst[i] = float64(math.Float32frombits(uint32(binary.LittleEndian.Uint16(src[2*i:])) << 16))
		}
	case tensorfile.F16:
		t := f16Table()
		for i := range n {
			dst[i] = float64(t[binary.LittleEndian.Uint16(src[2*i:])])
		}
	case tensorfile.F32:
		src, dst := src[:4*n], dst[:n]
		for i := widen(d, src, dst, n); i < n; i++ {
			dst[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:])))
		}
	case tensorfile.C64:
		for i := range 2 * n {
			dst[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:])))
		}
		return 2 * n
	case tensorfile.F64:
		for i := range n {
			dst[i] = math.Float64frombits(binary.LittleEndian.Uint64(src[8*i:]))
		}
	case tensorfile.F8_E4M3, tensorfile.F8_E5M2, tensorfile.F8_E4M3FNUZ, tensorfile.F8_E5M2FNUZ, tensorfile.F8_E8M0:
		t := f8Tables()[d]
		for i := range n {
			dst[i] = float64(t[src[i]])
		}
	case tensorfile.BOOL, tensorfile.U8:
		for i := range n {
			dst[i] = float64(src[i])
		}
	case tensorfile.I8:
		for i := range n {
			dst[i] = float64(int8(src[i]))
		}
	case tensorfile.I16:
		for i := range n {
			dst[i] = float64(int16(binary.LittleEndian.Uint16(src[2*i:])))
		}
	case tensorfile.U16:
		for i := range n {
			dst[i] = float64(binary.LittleEndian.Uint16(src[2*i:]))
		}
	case tensorfile.I32:
		for i := range n {
			dst[i] = float64(int32(binary.LittleEndian.Uint32(src[4*i:])))
		}
	case tensorfile.U32:
		for i := range n {
			dst[i] = float64(binary.LittleEndian.Uint32(src[4*i:]))
		}
	case tensorfile.I64:
		for i := range n {
			dst[i] = float64(int64(binary.LittleEndian.Uint64(src[8*i:])))
		}
	case tensorfile.U64:
		for i := range n {
			dst[i] = float64(binary.LittleEndian.Uint64(src[8*i:]))
		}
	default:
		return 0
	}
	return n
}

// DecodeInt decodes one integer element of d (BOOL, U8, ..., U64) exactly:
// its sign and magnitude, so that I64 and U64 values compare without
// rounding.
func DecodeInt(d tensorfile.DType, b []byte) (negative bool, magnitude uint64) {
	var v int64
	switch d {
	case tensorfile.BOOL, tensorfile.U8:
		return false, uint64(b[0])
	case tensorfile.U16:
		return false, uint64(binary.LittleEndian.Uint16(b))
	case tensorfile.U32:
		return false, uint64(binary.LittleEndian.Uint32(b))
	case tensorfile.U64:
		return false, binary.LittleEndian.Uint64(b)
	case tensorfile.I8:
		v = int64(int8(b[0]))
	case tensorfile.I16:
		v = int64(int16(binary.LittleEndian.Uint16(b)))
	case tensorfile.I32:
		v = int64(int32(binary.LittleEndian.Uint32(b)))
	case tensorfile.I64:
		v = int64(binary.LittleEndian.Uint64(b))
	}
	if v < 0 {
		return true, uint64(-(v + 1)) + 1 // no overflow at math.MinInt64
	}
	return false, uint64(v)
}

var (
	f16Once  sync.Once
	f16Float *[1 << 16]float32
)

// f16Table maps every F16 bit pattern to its float32 value, computed once
// from x448/float16 (the source of truth): a lookup is several times faster
// than converting each value.
func f16Table() *[1 << 16]float32 {
	f16Once.Do(func() {
		t := new([1 << 16]float32)
		for i := range t {
			t[i] = float16.Frombits(uint16(i)).Float32()
		}
		f16Float = t
	})
	return f16Float
}

// F16ToFloat32 decodes one F16 value.
func F16ToFloat32(bits uint16) float32 { return f16Table()[bits] }

// f8Tables hold the 256 values of each 8-bit float, indexed by dtype.
// They are built on first use: 1,280 decodes are no work for package init.
var f8Tables = sync.OnceValue(func() *[tensorfile.F8_E5M2FNUZ + 1]*[256]float32 {
	t := new([tensorfile.F8_E5M2FNUZ + 1]*[256]float32)
	for _, d := range []tensorfile.DType{tensorfile.F8_E5M2, tensorfile.F8_E4M3, tensorfile.F8_E4M3FNUZ, tensorfile.F8_E5M2FNUZ, tensorfile.F8_E8M0} {
		t[d] = new([256]float32)
	}
	for b := range 256 {
		t[tensorfile.F8_E5M2][b] = miniFloat(uint8(b), 5, 2, 15, true, false)
		t[tensorfile.F8_E4M3][b] = miniFloat(uint8(b), 4, 3, 7, false, false)
		t[tensorfile.F8_E4M3FNUZ][b] = miniFloat(uint8(b), 4, 3, 8, false, true)
		t[tensorfile.F8_E5M2FNUZ][b] = miniFloat(uint8(b), 5, 2, 16, false, true)
		t[tensorfile.F8_E8M0][b] = e8m0(uint8(b))
	}
	return t
})

// miniFloat decodes an 8-bit float with a sign bit, expBits of exponent and
// manBits of mantissa, from their specifications:
//   - ieee (E5M2): the all-ones exponent is infinity (mantissa 0) or NaN;
//   - otherwise "FN" (E4M3): no infinities, only S.1111.111 is NaN;
//   - fnuz (E4M3FNUZ, E5M2FNUZ): no infinities, no negative zero, and the
//     pattern 1000_0000 is the single NaN.
//
// Exponent 0 is subnormal: mantissa/2^manBits × 2^(1-bias).
func miniFloat(b uint8, expBits, manBits uint, bias int, ieee, fnuz bool) float32 {
	sign := b >> 7
	exp := int(b>>manBits) & (1<<expBits - 1)
	man := int(b) & (1<<manBits - 1)
	maxExp := 1<<expBits - 1
	switch {
	case fnuz && b == 0x80:
		return float32(math.NaN())
	case ieee && exp == maxExp && man == 0:
		return float32(math.Inf(1 - 2*int(sign)))
	case ieee && exp == maxExp:
		return float32(math.NaN())
	case !ieee && !fnuz && exp == maxExp && man == 1<<manBits-1:
		return float32(math.NaN())
	}
	var v float64
	if exp == 0 {
		v = math.Ldexp(float64(man)/float64(int(1)<<manBits), 1-bias)
	} else {
		v = math.Ldexp(1+float64(man)/float64(int(1)<<manBits), exp-bias)
	}
	if sign == 1 {
		v = -v
	}
	return float32(v)
}

// e8m0 decodes the OCP MX scale format: an unsigned, biased exponent
// 2^(b-127); 0xFF is NaN, and there is no zero.
func e8m0(b uint8) float32 {
	if b == 0xFF {
		return float32(math.NaN())
	}
	return float32(math.Ldexp(1, int(b)-127))
}
