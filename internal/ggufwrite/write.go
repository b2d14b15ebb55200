// Package ggufwrite writes GGUF files for tests, as llama.cpp's
// gguf-py/gguf/gguf_writer.py does (ggml-org/llama.cpp at
// 0024aa7417efd50a7c2a79e049dfbbbceb0beaaf): the header (magic, version,
// tensor count, key/value count), the key/value pairs, the tensor infos
// with dimensions in GGML order and offsets that are the running sum of
// the tensors' sizes each padded to the alignment, padding to the
// alignment, then each tensor's bytes followed by its padding. Fields
// exist to break each of those rules, for negative tests.
package ggufwrite

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
)

// Value types (gguf_type).
const (
	TypeUint8   = 0
	TypeInt8    = 1
	TypeUint16  = 2
	TypeInt16   = 3
	TypeUint32  = 4
	TypeInt32   = 5
	TypeFloat32 = 6
	TypeBool    = 7
	TypeString  = 8
	TypeArray   = 9
	TypeUint64  = 10
	TypeInt64   = 11
	TypeFloat64 = 12
)

// A Value is a typed metadata value, already encoded.
type Value struct {
	Type    uint32
	payload []byte
}

var le = binary.LittleEndian

func U8(v uint8) Value   { return Value{TypeUint8, []byte{v}} }
func I8(v int8) Value    { return Value{TypeInt8, []byte{byte(v)}} }
func U16(v uint16) Value { return Value{TypeUint16, le.AppendUint16(nil, v)} }
func I16(v int16) Value  { return Value{TypeInt16, le.AppendUint16(nil, uint16(v))} }
func U32(v uint32) Value { return Value{TypeUint32, le.AppendUint32(nil, v)} }
func I32(v int32) Value  { return Value{TypeInt32, le.AppendUint32(nil, uint32(v))} }
func U64(v uint64) Value { return Value{TypeUint64, le.AppendUint64(nil, v)} }
func I64(v int64) Value  { return Value{TypeInt64, le.AppendUint64(nil, uint64(v))} }
func F32(v float32) Value {
	return Value{TypeFloat32, le.AppendUint32(nil, math.Float32bits(v))}
}
func F64(v float64) Value {
	return Value{TypeFloat64, le.AppendUint64(nil, math.Float64bits(v))}
}
func Bool(v bool) Value {
	if v {
		return Value{TypeBool, []byte{1}}
	}
	return Value{TypeBool, []byte{0}}
}
func Str(s string) Value { return Value{TypeString, appendStr(nil, s)} }

// Raw is a value of any type number with the given encoded bytes.
func Raw(t uint32, payload []byte) Value { return Value{t, payload} }

// Array is an array of elem values; items are not checked against elem.
func Array(elem uint32, items ...Value) Value {
	b := le.AppendUint32(nil, elem)
	b = le.AppendUint64(b, uint64(len(items)))
	for _, it := range items {
		b = append(b, it.payload...)
	}
	return Value{TypeArray, b}
}

// Strings is an array of strings.
func Strings(s ...string) Value {
	items := make([]Value, len(s))
	for i, x := range s {
		items[i] = Str(x)
	}
	return Array(TypeString, items...)
}

// A KV is a metadata pair.
type KV struct {
	Key   string
	Value Value
}

// A Tensor is a tensor to write: Dims in GGML order (Dims[0] the row
// length), a GGML type number, its bytes.
type Tensor struct {
	Name string
	Dims []uint64
	Type uint32
	Data []byte
	// Offset, when SetOffset, replaces the running padded sum.
	Offset    uint64
	SetOffset bool
}

// A File is what to write. Alignment 0 is 32, and writes no
// general.alignment (add it to KV to write one).
type File struct {
	Version   uint32 // 0 is 3
	Magic     string // "" is "GGUF"
	Alignment uint64
	KV        []KV
	Tensors   []Tensor
	// NoTrailingPad leaves out the padding after the last tensor.
	NoTrailingPad bool
}

// Bytes writes the file.
func (f File) Bytes() []byte {
	align := f.Alignment
	if align == 0 {
		align = 32
	}
	magic, version := f.Magic, f.Version
	if magic == "" {
		magic = "GGUF"
	}
	if version == 0 {
		version = 3
	}
	infos := make([]Info, len(f.Tensors))
	for i, t := range f.Tensors {
		infos[i] = Info{Name: t.Name, Dims: t.Dims, Type: t.Type, Size: uint64(len(t.Data)), Offset: t.Offset, SetOffset: t.SetOffset}
	}
	b := appendHeader(nil, magic, version, align, f.KV, infos)
	for i, t := range f.Tensors {
		b = append(b, t.Data...)
		if !(f.NoTrailingPad && i == len(f.Tensors)-1) {
			b = padTo(b, align)
		}
	}
	return b
}

// An Info is a tensor's entry in the header: Dims in GGML order, the GGML
// type number, the size of its bytes.
type Info struct {
	Name string
	Dims []uint64
	Type uint32
	Size uint64
	// Offset, when SetOffset, replaces the running padded sum.
	Offset    uint64
	SetOffset bool
}

// appendHeader appends the header of a version-3 file up to its data
// section, padded to align.
func appendHeader(b []byte, magic string, version uint32, align uint64, kvs []KV, infos []Info) []byte {
	b = append(b, magic...)
	b = le.AppendUint32(b, version)
	b = le.AppendUint64(b, uint64(len(infos)))
	b = le.AppendUint64(b, uint64(len(kvs)))
	for _, kv := range kvs {
		b = appendStr(b, kv.Key)
		b = le.AppendUint32(b, kv.Value.Type)
		b = append(b, kv.Value.payload...)
	}
	var off uint64
	for _, t := range infos {
		b = appendStr(b, t.Name)
		b = le.AppendUint32(b, uint32(len(t.Dims)))
		for _, d := range t.Dims {
			b = le.AppendUint64(b, d)
		}
		b = le.AppendUint32(b, t.Type)
		if t.SetOffset {
			b = le.AppendUint64(b, t.Offset)
		} else {
			b = le.AppendUint64(b, off)
		}
		off += Pad(t.Size, align)
	}
	return padTo(b, align)
}

// Stream writes a well-formed file (version 3, alignment 32) a tensor at a
// time, so that a full-size model never sits in memory: data(i) gives
// tensor i's bytes, which must be infos[i].Size long.
func Stream(w io.Writer, kvs []KV, infos []Info, data func(i int) ([]byte, error)) error {
	const align = 32
	if _, err := w.Write(appendHeader(nil, "GGUF", 3, align, kvs, infos)); err != nil {
		return err
	}
	var zeros [align]byte
	for i, t := range infos {
		b, err := data(i)
		if err != nil {
			return err
		}
		if uint64(len(b)) != t.Size {
			return fmt.Errorf("ggufwrite: tensor %q: %d bytes, the header says %d", t.Name, len(b), t.Size)
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
		if _, err := w.Write(zeros[:Pad(t.Size, align)-t.Size]); err != nil {
			return err
		}
	}
	return nil
}

// Pad rounds n up to a multiple of align (ggml_pad).
func Pad(n, align uint64) uint64 { return (n + align - 1) / align * align }

func padTo(b []byte, align uint64) []byte {
	for uint64(len(b))%align != 0 {
		b = append(b, 0)
	}
	return b
}

func appendStr(b []byte, s string) []byte {
	b = le.AppendUint64(b, uint64(len(s)))
	return append(b, s...)
}

// P is the pair key, v.
func P(key string, v Value) KV { return KV{Key: key, Value: v} }
