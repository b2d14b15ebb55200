package safetensors

import "github.com/ckptcheck/ckptcheck/tensorfile"

// The dtype table moved to package tensorfile, which every format shares.
// These aliases keep callers of safetensors.DType compiling until they
// name tensorfile directly.

// DType is tensorfile.DType.
type DType = tensorfile.DType

// The dtypes, as tensorfile declares them.
const (
	BOOL        = tensorfile.BOOL
	F4          = tensorfile.F4
	F6_E2M3     = tensorfile.F6_E2M3
	F6_E3M2     = tensorfile.F6_E3M2
	U8          = tensorfile.U8
	I8          = tensorfile.I8
	F8_E5M2     = tensorfile.F8_E5M2
	F8_E4M3     = tensorfile.F8_E4M3
	F8_E8M0     = tensorfile.F8_E8M0
	F8_E4M3FNUZ = tensorfile.F8_E4M3FNUZ
	F8_E5M2FNUZ = tensorfile.F8_E5M2FNUZ
	I16         = tensorfile.I16
	U16         = tensorfile.U16
	F16         = tensorfile.F16
	BF16        = tensorfile.BF16
	I32         = tensorfile.I32
	U32         = tensorfile.U32
	F32         = tensorfile.F32
	C64         = tensorfile.C64
	F64         = tensorfile.F64
	I64         = tensorfile.I64
	U64         = tensorfile.U64
)

// DTypes is tensorfile.DTypes.
func DTypes() []DType { return tensorfile.DTypes() }

// ParseDType is tensorfile.ParseDType.
func ParseDType(name string) (DType, bool) { return tensorfile.ParseDType(name) }

// LookupDType is tensorfile.LookupDType.
func LookupDType(name string) (DType, bool) { return tensorfile.LookupDType(name) }

// FormatShape is tensorfile.FormatShape.
func FormatShape(shape []uint64) string { return tensorfile.FormatShape(shape) }
