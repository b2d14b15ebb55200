package gguf

import (
	"strconv"

	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// A Type is a GGML tensor type (enum ggml_type), as a tensor info stores it.
type Type uint32

// The GGML types, with ggml's values (ggml/include/ggml.h). Values ggml
// removed (4, 5, 31–33, 36–38) are unknown types here, as they are to ggml.
const (
	TypeF32     Type = 0
	TypeF16     Type = 1
	TypeQ4_0    Type = 2
	TypeQ4_1    Type = 3
	TypeQ5_0    Type = 6
	TypeQ5_1    Type = 7
	TypeQ8_0    Type = 8
	TypeQ8_1    Type = 9
	TypeQ2_K    Type = 10
	TypeQ3_K    Type = 11
	TypeQ4_K    Type = 12
	TypeQ5_K    Type = 13
	TypeQ6_K    Type = 14
	TypeQ8_K    Type = 15
	TypeIQ2_XXS Type = 16
	TypeIQ2_XS  Type = 17
	TypeIQ3_XXS Type = 18
	TypeIQ1_S   Type = 19
	TypeIQ4_NL  Type = 20
	TypeIQ3_S   Type = 21
	TypeIQ2_S   Type = 22
	TypeIQ4_XS  Type = 23
	TypeI8      Type = 24
	TypeI16     Type = 25
	TypeI32     Type = 26
	TypeI64     Type = 27
	TypeF64     Type = 28
	TypeIQ1_M   Type = 29
	TypeBF16    Type = 30
	TypeTQ1_0   Type = 34
	TypeTQ2_0   Type = 35
	TypeMXFP4   Type = 39
	TypeNVFP4   Type = 40
	TypeQ1_0    Type = 41
)

// typeInfo maps a GGML type to a plain dtype or a block encoding.
var typeInfo = map[Type]struct {
	dtype    tensorfile.DType
	encoding tensorfile.Encoding
}{
	TypeF32: {dtype: tensorfile.F32}, TypeF16: {dtype: tensorfile.F16}, TypeBF16: {dtype: tensorfile.BF16},
	TypeF64: {dtype: tensorfile.F64}, TypeI8: {dtype: tensorfile.I8}, TypeI16: {dtype: tensorfile.I16},
	TypeI32: {dtype: tensorfile.I32}, TypeI64: {dtype: tensorfile.I64},
	TypeQ4_0: {encoding: tensorfile.Q4_0}, TypeQ4_1: {encoding: tensorfile.Q4_1},
	TypeQ5_0: {encoding: tensorfile.Q5_0}, TypeQ5_1: {encoding: tensorfile.Q5_1},
	TypeQ8_0: {encoding: tensorfile.Q8_0}, TypeQ8_1: {encoding: tensorfile.Q8_1},
	TypeQ2_K: {encoding: tensorfile.Q2_K}, TypeQ3_K: {encoding: tensorfile.Q3_K},
	TypeQ4_K: {encoding: tensorfile.Q4_K}, TypeQ5_K: {encoding: tensorfile.Q5_K},
	TypeQ6_K: {encoding: tensorfile.Q6_K}, TypeQ8_K: {encoding: tensorfile.Q8_K},
	TypeIQ2_XXS: {encoding: tensorfile.IQ2_XXS}, TypeIQ2_XS: {encoding: tensorfile.IQ2_XS},
	TypeIQ3_XXS: {encoding: tensorfile.IQ3_XXS}, TypeIQ1_S: {encoding: tensorfile.IQ1_S},
	TypeIQ4_NL: {encoding: tensorfile.IQ4_NL}, TypeIQ3_S: {encoding: tensorfile.IQ3_S},
	TypeIQ2_S: {encoding: tensorfile.IQ2_S}, TypeIQ4_XS: {encoding: tensorfile.IQ4_XS},
	TypeIQ1_M: {encoding: tensorfile.IQ1_M}, TypeTQ1_0: {encoding: tensorfile.TQ1_0},
	TypeTQ2_0: {encoding: tensorfile.TQ2_0}, TypeMXFP4: {encoding: tensorfile.MXFP4},
	TypeNVFP4: {encoding: tensorfile.NVFP4}, TypeQ1_0: {encoding: tensorfile.Q1_0},
}

// Known reports whether t is a GGML type this reader knows.
func (t Type) Known() bool { _, ok := typeInfo[t]; return ok }

// DType is t's plain dtype (F32, F16, BF16, F64, I8…I64); ok is false for a
// block type.
func (t Type) DType() (d tensorfile.DType, ok bool) {
	info, known := typeInfo[t]
	return info.dtype, known && info.encoding == 0
}

// Encoding is t's block encoding; ok is false for a plain type.
func (t Type) Encoding() (e tensorfile.Encoding, ok bool) {
	info := typeInfo[t]
	return info.encoding, info.encoding != 0
}

// Block is t's geometry: one element of its dtype, or a block of its
// encoding; the zero Block for an unknown type.
func (t Type) Block() tensorfile.Block {
	info, ok := typeInfo[t]
	switch {
	case !ok:
		return tensorfile.Block{}
	case info.encoding != 0:
		return info.encoding.Block()
	}
	return tensorfile.Block{Elements: 1, Bytes: uint64(info.dtype.Bits() / 8)}
}

// String is the type's ggml name in upper case ("Q4_K", "F32"), as
// llama.cpp's tools print it.
func (t Type) String() string {
	info, ok := typeInfo[t]
	switch {
	case !ok:
		return "Type(" + strconv.FormatUint(uint64(t), 10) + ")"
	case info.encoding != 0:
		return info.encoding.String()
	}
	return info.dtype.String()
}

// A ValueType is the type of a metadata value (enum gguf_type).
type ValueType uint32

// The GGUF value types, with their values in the file.
const (
	ValueUint8    ValueType = 0
	ValueInt8     ValueType = 1
	ValueUint16   ValueType = 2
	ValueInt16    ValueType = 3
	ValueUint32   ValueType = 4
	ValueInt32    ValueType = 5
	ValueFloat32  ValueType = 6
	ValueBool     ValueType = 7
	ValueString   ValueType = 8
	ValueArray    ValueType = 9
	ValueUint64   ValueType = 10
	ValueInt64    ValueType = 11
	ValueFloat64  ValueType = 12
	numValueTypes ValueType = 13
)

var valueTypeInfo = [numValueTypes]struct {
	name string
	size uint64 // bytes of a scalar; the minimum for strings (length) and arrays (type, count)
}{
	ValueUint8: {"u8", 1}, ValueInt8: {"i8", 1}, ValueUint16: {"u16", 2}, ValueInt16: {"i16", 2},
	ValueUint32: {"u32", 4}, ValueInt32: {"i32", 4}, ValueFloat32: {"f32", 4}, ValueBool: {"bool", 1},
	ValueString: {"str", 8}, ValueArray: {"arr", 12}, ValueUint64: {"u64", 8}, ValueInt64: {"i64", 8},
	ValueFloat64: {"f64", 8},
}

// Valid reports whether t is a GGUF value type.
func (t ValueType) Valid() bool { return t < numValueTypes }

// String is gguf's name for the type ("u32", "str", "arr").
func (t ValueType) String() string {
	if t.Valid() {
		return valueTypeInfo[t].name
	}
	return "ValueType(" + strconv.FormatUint(uint64(t), 10) + ")"
}
