package quant_test

import (
	"encoding/binary"
	"math"

	"github.com/x448/float16"

	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// Test-side number formats, written independently of the package's code.

// bf16RNE rounds v to BF16 by comparing the two neighbours it lies between
// (ties to the even one), the definition rather than the bit trick.
func bf16RNE(v float32) float32 {
	if v != v || math.IsInf(float64(v), 0) {
		return v
	}
	b := math.Float32bits(v)
	lo := math.Float32frombits(b &^ 0xFFFF)
	hi := math.Float32frombits((b &^ 0xFFFF) + 0x10000) // next BF16 away from zero
	dlo, dhi := math.Abs(float64(v)-float64(lo)), math.Abs(float64(hi)-float64(v))
	switch {
	case dlo < dhi:
		return lo
	case dhi < dlo:
		return hi
	case (b>>16)&1 == 0:
		return lo
	}
	return hi
}

// roundAs stores a float32 product in d, as torch's .to(d) does.
func roundAs(d tensorfile.DType, v float32) float32 {
	switch d {
	case tensorfile.BF16:
		return bf16RNE(v)
	case tensorfile.F16:
		return float16.Fromfloat32(v).Float32()
	}
	return v
}

// encodeAs is v (already representable) in d's little-endian bytes.
func encodeAs(d tensorfile.DType, v float32) []byte {
	switch d {
	case tensorfile.BF16:
		return binary.LittleEndian.AppendUint16(nil, uint16(math.Float32bits(v)>>16))
	case tensorfile.F16:
		return binary.LittleEndian.AppendUint16(nil, float16.Fromfloat32(v).Bits())
	}
	return f32(v)
}

// randScale is a positive scale representable in d.
func randScale(rnd func() float32, d tensorfile.DType) float32 {
	v := rnd()*0.05 + 1e-4
	switch d {
	case tensorfile.BF16:
		return math.Float32frombits(math.Float32bits(v) &^ 0xFFFF)
	case tensorfile.F16:
		return float16.Fromfloat32(v).Float32()
	}
	return v
}

func u32le(words []uint32) []byte {
	var b []byte
	for _, w := range words {
		b = binary.LittleEndian.AppendUint32(b, w)
	}
	return b
}
