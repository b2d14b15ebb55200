package tensorfile

import (
	"errors"
	"math/bits"
	"strconv"
	"strings"
	"sync"
)

// DType is the element type of a tensor, as named in a safetensors header.
//
// The constants are declared in the reference implementation's order, which
// is also the official writer's sort order: the writer places tensors with a
// larger DType first, so every tensor starts aligned to its element size.
type DType uint8

const (
	BOOL DType = iota
	F4
	F6_E2M3
	F6_E3M2
	U8
	I8
	F8_E5M2
	F8_E4M3
	F8_E8M0
	F8_E4M3FNUZ
	F8_E5M2FNUZ
	I16
	U16
	F16
	BF16
	I32
	U32
	F32
	C64
	F64
	I64
	U64
	numDTypes
)

var dtypeInfo = [numDTypes]struct {
	name string
	bits int
}{
	BOOL:        {"BOOL", 8},
	F4:          {"F4", 4},
	F6_E2M3:     {"F6_E2M3", 6},
	F6_E3M2:     {"F6_E3M2", 6},
	U8:          {"U8", 8},
	I8:          {"I8", 8},
	F8_E5M2:     {"F8_E5M2", 8},
	F8_E4M3:     {"F8_E4M3", 8},
	F8_E8M0:     {"F8_E8M0", 8},
	F8_E4M3FNUZ: {"F8_E4M3FNUZ", 8},
	F8_E5M2FNUZ: {"F8_E5M2FNUZ", 8},
	I16:         {"I16", 16},
	U16:         {"U16", 16},
	F16:         {"F16", 16},
	BF16:        {"BF16", 16},
	I32:         {"I32", 32},
	U32:         {"U32", 32},
	F32:         {"F32", 32},
	C64:         {"C64", 64},
	F64:         {"F64", 64},
	I64:         {"I64", 64},
	U64:         {"U64", 64},
}

// DTypes returns every dtype the reader knows, in declaration order.
func DTypes() []DType {
	all := make([]DType, numDTypes)
	for i := range all {
		all[i] = DType(i)
	}
	return all
}

// ParseDType returns the dtype with the given header name. Names are
// case-sensitive, as in the reference implementation.
func ParseDType(name string) (DType, bool) {
	d, ok := dtypesByName[name]
	return d, ok
}

var dtypesByName = func() map[string]DType {
	m := make(map[string]DType, numDTypes)
	for i, info := range dtypeInfo {
		m[info.name] = DType(i)
	}
	return m
}()

// dtypeAliases are the names dtypes go by outside headers: torch's
// (config.json's "torch_dtype"/"dtype", "torch.bfloat16") and common
// abbreviations. Keys are lower case.
var dtypeAliases = sync.OnceValue(func() map[string]DType {
	return map[string]DType{
		"bfloat16": BF16, "bf16": BF16,
		"float32": F32, "float": F32, "fp32": F32, "f32": F32,
		"float16": F16, "half": F16, "fp16": F16, "f16": F16,
		"float64": F64, "double": F64, "fp64": F64, "f64": F64,
		"float8_e4m3fn": F8_E4M3, "fp8": F8_E4M3, "float8_e5m2": F8_E5M2,
		"float8_e4m3fnuz": F8_E4M3FNUZ, "float8_e5m2fnuz": F8_E5M2FNUZ, "float8_e8m0fnu": F8_E8M0,
		"float4_e2m1fn_x2": F4,
		"int8":             I8, "uint8": U8, "int16": I16, "uint16": U16, "int32": I32, "uint32": U32,
		"int64": I64, "uint64": U64, "bool": BOOL, "complex64": C64,
	}
})

// LookupDType finds a dtype by any name it goes by: a header name in any
// case ("bf16", "BF16") or a torch name, with or without "torch."
// ("bfloat16", "torch.float32"). Headers themselves are parsed with
// ParseDType, which is case-sensitive as the reference is.
func LookupDType(name string) (DType, bool) {
	lower := strings.TrimPrefix(strings.ToLower(strings.TrimSpace(name)), "torch.")
	if d, ok := dtypeAliases()[lower]; ok {
		return d, true
	}
	return ParseDType(strings.ToUpper(lower))
}

func (d DType) String() string {
	if d < numDTypes {
		return dtypeInfo[d].name
	}
	return "DType(" + itoa(uint64(d)) + ")"
}

// MarshalText writes the header name, so dtypes print as "BF16" in JSON.
func (d DType) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText reads a header name, so that JSON written with MarshalText
// (a report read back) reads back.
func (d *DType) UnmarshalText(b []byte) error {
	v, ok := ParseDType(string(b))
	if !ok {
		return errors.New("unknown dtype " + strconv.Quote(string(b)))
	}
	*d = v
	return nil
}

// Valid reports whether d is one of the declared dtypes.
func (d DType) Valid() bool { return d < numDTypes }

// Bits is the size of one element in bits. Some dtypes (F4, F6_*) are smaller
// than a byte; a tensor of them must still fill whole bytes.
func (d DType) Bits() int {
	if d < numDTypes {
		return dtypeInfo[d].bits
	}
	return 0
}

// Bytes is the size in bytes of n elements of d: n·Bits/8, rounded down,
// which for a sub-byte dtype is exact only when n·Bits fills whole bytes (a
// tensor of them always does; so does a block of them whose element count is
// a multiple of Block().Elements). The product is taken in 128 bits, so the
// result is exact whenever it fits in 64; beyond that it saturates at
// math.MaxUint64, which no file holds.
func (d DType) Bytes(n uint64) uint64 {
	hi, lo := bits.Mul64(n, uint64(d.Bits()))
	if hi >= 8 {
		return ^uint64(0)
	}
	q, _ := bits.Div64(hi, lo, 8)
	return q
}

// Block is the smallest run of whole elements that fills whole bytes: one
// element for byte-sized dtypes, 2 elements in 1 byte for F4, 4 in 3 bytes
// for the F6 types. An invalid dtype has the zero Block.
func (d DType) Block() Block {
	b := uint64(d.Bits())
	if b == 0 {
		return Block{}
	}
	n := uint64(8)
	for n%b != 0 { // lcm(bits, 8) / bits elements
		n += 8
	}
	return Block{Elements: n / b, Bytes: n / 8}
}

// IsInteger reports whether d holds integers (BOOL included).
func (d DType) IsInteger() bool { return d < numDTypes && !d.IsFloat() }

// Decodable reports whether d decodes to numbers (package quant's
// DecodeFloat64): every dtype but the sub-byte F4, F6_E2M3 and F6_E3M2,
// which compare bit for bit.
func (d DType) Decodable() bool { return d < numDTypes && d.Bits()%8 == 0 }

// Lanes is how many values one element decodes to: 2 for the complex C64
// (real, imaginary), else 1.
func (d DType) Lanes() int {
	if d == C64 {
		return 2
	}
	return 1
}

// IsFloat reports whether the dtype holds floating-point numbers (including
// the complex C64).
func (d DType) IsFloat() bool {
	switch d {
	case BOOL, U8, I8, I16, U16, I32, U32, I64, U64:
		return false
	}
	return d < numDTypes
}

func itoa(v uint64) string {
	var buf [20]byte
	i := len(buf)
	for {
		i--
		buf[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			return string(buf[i:])
		}
	}
}
