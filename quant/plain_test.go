package quant

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/x448/float16"

	"github.com/ckptcheck/ckptcheck/tensorfile"
)

func TestF16AllPatterns(t *testing.T) {
	src := make([]byte, 2)
	dst := make([]float64, 1)
	for i := range 1 << 16 {
		binary.LittleEndian.PutUint16(src, uint16(i))
		DecodeFloat64(tensorfile.F16, src, dst)
		want := float64(float16.Frombits(uint16(i)).Float32())
		if dst[0] != want && !(math.IsNaN(dst[0]) && math.IsNaN(want)) {
			t.Fatalf("F16 %#04x: %v, x448 says %v", i, dst[0], want)
		}
		if math.Signbit(dst[0]) != math.Signbit(want) {
			t.Fatalf("F16 %#04x: sign differs", i)
		}
	}
}

// TestF16KnownValues pins the table to values from IEEE 754 binary16's
// definition, independent of the library the table is built from.
func TestF16KnownValues(t *testing.T) {
	tests := []struct {
		bits uint16
		want float64
	}{
		{0x3C00, 1},
		{0xBC00, -1},
		{0x7BFF, 65504},
		{0x0001, math.Ldexp(1, -24)},
		{0x0400, math.Ldexp(1, -14)},
		{0x3555, 0.333251953125},
		{0x7C00, math.Inf(1)},
		{0xFC00, math.Inf(-1)},
		{0x0000, 0},
	}
	dst := make([]float64, 1)
	for _, tt := range tests {
		if got := float64(F16ToFloat32(tt.bits)); got != tt.want {
			t.Errorf("F16ToFloat32(%#04x) = %v, want %v", tt.bits, got, tt.want)
		}
		if n := DecodeFloat64(tensorfile.F16, binary.LittleEndian.AppendUint16(nil, tt.bits), dst); n != 1 || dst[0] != tt.want {
			t.Errorf("DecodeFloat64(F16, %#04x) = %v (%d values), want %v", tt.bits, dst[0], n, tt.want)
		}
	}
	if v := F16ToFloat32(0x7E00); !math.IsNaN(float64(v)) {
		t.Errorf("F16 0x7E00 = %v, want NaN", v)
	}
	if v := F16ToFloat32(0x8000); v != 0 || !math.Signbit(float64(v)) {
		t.Errorf("F16 0x8000 = %v, want -0", v)
	}
}

func f8(d tensorfile.DType, b byte) float64 {
	dst := make([]float64, 1)
	DecodeFloat64(d, []byte{b}, dst)
	return dst[0]
}

func TestF8SpecialValues(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		d    tensorfile.DType
		b    byte
		want float64
	}{
		// E4M3 ("fn"): bias 7, no infinities, S.1111.111 is NaN, max 448.
		{tensorfile.F8_E4M3, 0x00, 0}, {tensorfile.F8_E4M3, 0x38, 1}, {tensorfile.F8_E4M3, 0x7E, 448}, {tensorfile.F8_E4M3, 0xFE, -448},
		{tensorfile.F8_E4M3, 0x7F, nan}, {tensorfile.F8_E4M3, 0xFF, nan}, {tensorfile.F8_E4M3, 0x78, 256}, {tensorfile.F8_E4M3, 0x08, math.Ldexp(1, -6)},
		{tensorfile.F8_E4M3, 0x01, math.Ldexp(1, -9)}, {tensorfile.F8_E4M3, 0x07, 7 * math.Ldexp(1, -9)},
		// E5M2: IEEE-like, bias 15, infinities and NaNs, max 57344.
		{tensorfile.F8_E5M2, 0x3C, 1}, {tensorfile.F8_E5M2, 0x7B, 57344}, {tensorfile.F8_E5M2, 0x7C, math.Inf(1)}, {tensorfile.F8_E5M2, 0xFC, math.Inf(-1)},
		{tensorfile.F8_E5M2, 0x7D, nan}, {tensorfile.F8_E5M2, 0xFF, nan}, {tensorfile.F8_E5M2, 0x01, math.Ldexp(1, -16)}, {tensorfile.F8_E5M2, 0x80, math.Copysign(0, -1)},
		// E4M3FNUZ: bias 8, one NaN (0x80), no -0, no infinities, max 240.
		{tensorfile.F8_E4M3FNUZ, 0x80, nan}, {tensorfile.F8_E4M3FNUZ, 0x40, 1}, {tensorfile.F8_E4M3FNUZ, 0x7F, 240}, {tensorfile.F8_E4M3FNUZ, 0xFF, -240},
		{tensorfile.F8_E4M3FNUZ, 0x01, math.Ldexp(1, -10)},
		// E5M2FNUZ: bias 16, one NaN, max 57344.
		{tensorfile.F8_E5M2FNUZ, 0x80, nan}, {tensorfile.F8_E5M2FNUZ, 0x40, 1}, {tensorfile.F8_E5M2FNUZ, 0x7F, 57344}, {tensorfile.F8_E5M2FNUZ, 0x7C, 32768},
		{tensorfile.F8_E5M2FNUZ, 0x01, math.Ldexp(1, -17)},
		// E8M0: 2^(b-127), 0xFF NaN, no zero and no sign.
		{tensorfile.F8_E8M0, 0x7F, 1}, {tensorfile.F8_E8M0, 0x80, 2}, {tensorfile.F8_E8M0, 0x00, math.Ldexp(1, -127)}, {tensorfile.F8_E8M0, 0xFF, nan}, {tensorfile.F8_E8M0, 0xFE, math.Ldexp(1, 127)},
	}
	for _, tt := range tests {
		got := f8(tt.d, tt.b)
		if math.IsNaN(tt.want) != math.IsNaN(got) || (!math.IsNaN(got) && (got != tt.want || math.Signbit(got) != math.Signbit(tt.want))) {
			t.Errorf("%s %#02x = %v, want %v", tt.d, tt.b, got, tt.want)
		}
	}
	// Counts from the specifications: E4M3 has 2 NaNs and no infinities;
	// E5M2 6 NaNs and 2 infinities; the FNUZ types one NaN and no -0.
	for _, c := range []struct {
		d                tensorfile.DType
		nans, infs, neg0 int
	}{{tensorfile.F8_E4M3, 2, 0, 1}, {tensorfile.F8_E5M2, 6, 2, 1}, {tensorfile.F8_E4M3FNUZ, 1, 0, 0}, {tensorfile.F8_E5M2FNUZ, 1, 0, 0}, {tensorfile.F8_E8M0, 1, 0, 0}} {
		var nans, infs, neg0 int
		for b := range 256 {
			v := f8(c.d, byte(b))
			switch {
			case math.IsNaN(v):
				nans++
			case math.IsInf(v, 0):
				infs++
			case v == 0 && math.Signbit(v):
				neg0++
			}
		}
		if nans != c.nans || infs != c.infs || neg0 != c.neg0 {
			t.Errorf("%s: %d NaN, %d Inf, %d -0; want %d, %d, %d", c.d, nans, infs, neg0, c.nans, c.infs, c.neg0)
		}
	}
}

func TestDecodeIntegersAndOthers(t *testing.T) {
	le := binary.LittleEndian
	dst := make([]float64, 4)
	tests := []struct {
		d    tensorfile.DType
		src  []byte
		want []float64
	}{
		{tensorfile.BF16, le.AppendUint16(nil, 0x3F80), []float64{1}},
		{tensorfile.F32, le.AppendUint32(nil, math.Float32bits(-2.5)), []float64{-2.5}},
		{tensorfile.F64, le.AppendUint64(nil, math.Float64bits(1e300)), []float64{1e300}},
		{tensorfile.C64, le.AppendUint32(le.AppendUint32(nil, math.Float32bits(1)), math.Float32bits(-1)), []float64{1, -1}},
		{tensorfile.I8, []byte{0xFF}, []float64{-1}},
		{tensorfile.U8, []byte{0xFF}, []float64{255}},
		{tensorfile.BOOL, []byte{1, 0}, []float64{1, 0}},
		{tensorfile.I16, le.AppendUint16(nil, 0x8000), []float64{-32768}},
		{tensorfile.U16, le.AppendUint16(nil, 0x8000), []float64{32768}},
		{tensorfile.I32, le.AppendUint32(nil, 0xFFFFFFFE), []float64{-2}},
		{tensorfile.U32, le.AppendUint32(nil, 0xFFFFFFFE), []float64{4294967294}},
		{tensorfile.I64, le.AppendUint64(nil, 1<<62), []float64{1 << 62}},
		{tensorfile.U64, le.AppendUint64(nil, 1<<63), []float64{1 << 63}},
	}
	for _, tt := range tests {
		n := DecodeFloat64(tt.d, tt.src, dst)
		if n != len(tt.want) {
			t.Errorf("%s: %d values, want %d", tt.d, n, len(tt.want))
			continue
		}
		for i, w := range tt.want {
			if dst[i] != w {
				t.Errorf("%s[%d] = %v, want %v", tt.d, i, dst[i], w)
			}
		}
	}
	if n := DecodeFloat64(tensorfile.F4, []byte{0x12}, dst); n != 0 || tensorfile.F4.Decodable() || !tensorfile.F8_E4M3.Decodable() {
		t.Error("F4 is compared bit for bit, not decoded")
	}
	neg, mag := DecodeInt(tensorfile.I64, le.AppendUint64(nil, 1<<63))
	if !neg || mag != 1<<63 {
		t.Errorf("I64 min = %v %d", neg, mag)
	}
	neg, mag = DecodeInt(tensorfile.U64, le.AppendUint64(nil, math.MaxUint64))
	if neg || mag != math.MaxUint64 {
		t.Errorf("U64 max = %v %d", neg, mag)
	}
}

func BenchmarkF16Table(b *testing.B) {
	src := make([]byte, 2*4096)
	for i := range 4096 {
		binary.LittleEndian.PutUint16(src[2*i:], uint16(i*13))
	}
	dst := make([]float64, 4096)
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		DecodeFloat64(tensorfile.F16, src, dst)
	}
}

// BenchmarkF16X448 is the per-value library call the table replaces.
func BenchmarkF16X448(b *testing.B) {
	src := make([]uint16, 4096)
	for i := range src {
		src[i] = uint16(i * 13)
	}
	dst := make([]float64, 4096)
	b.SetBytes(2 * 4096)
	for b.Loop() {
		for i, v := range src {
			dst[i] = float64(float16.Frombits(v).Float32())
		}
	}
}

// TestBF16WordPath checks the four-at-a-time BF16 decode, and its tail,
// against the one-value definition on every bit pattern.
func TestBF16WordPath(t *testing.T) {
	const n = 1<<16 + 3
	src := make([]byte, 2*n)
	for i := range n {
		binary.LittleEndian.PutUint16(src[2*i:], uint16(i*40503))
	}
	dst := make([]float64, n)
	DecodeFloat64(tensorfile.BF16, src, dst)
	for i := range n {
		want := float64(math.Float32frombits(uint32(binary.LittleEndian.Uint16(src[2*i:])) << 16))
		if math.Float64bits(dst[i]) != math.Float64bits(want) && !(math.IsNaN(want) && math.IsNaN(dst[i])) {
			t.Fatalf("value %d (%#04x): %v, want %v", i, binary.LittleEndian.Uint16(src[2*i:]), dst[i], want)
		}
	}
}
