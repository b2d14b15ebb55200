package safetensors

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

func (d DType) String() string {
	if d < numDTypes {
		return dtypeInfo[d].name
	}
	return "DType(" + itoa(uint64(d)) + ")"
}

// MarshalText writes the header name, so dtypes print as "BF16" in JSON.
func (d DType) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// Bits is the size of one element in bits. Some dtypes (F4, F6_*) are smaller
// than a byte; a tensor of them must still fill whole bytes.
func (d DType) Bits() int {
	if d < numDTypes {
		return dtypeInfo[d].bits
	}
	return 0
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
