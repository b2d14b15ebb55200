package gguf

import (
	"encoding/binary"
	"errors"
	"io"
	"math"
)

// MaxHeaderSize bounds the header (everything before the data section):
// 512 MiB, far above the largest tokenizer arrays real files carry.
const MaxHeaderSize = 512 << 20

// firstRead is the first window of the header read at once; later windows
// double it, so a header of h bytes takes about log2(h/firstRead)+1 reads.
const firstRead = 1 << 20

// window reads the header front to back through growing windows of the
// file, all of them kept: the header is parsed from memory, and reading it
// costs a few ReadAt calls however many values it holds.
type window struct {
	r     io.ReaderAt
	size  int64
	buf   []byte // the file's bytes [0, len(buf))
	pos   int64
	reads int
	err   error // a read error, which ends parsing
}

// remain is how many bytes of the file follow pos.
func (w *window) remain() uint64 { return uint64(w.size - w.pos) }

// need makes n bytes from pos available in buf.
func (w *window) need(n uint64, what string) *FormatError {
	if n > w.remain() {
		return &FormatError{Kind: Truncated, Offset: w.pos, Msg: "the file ends in " + what}
	}
	end := w.pos + int64(n)
	if end <= int64(len(w.buf)) {
		return nil
	}
	if end > MaxHeaderSize {
		return &FormatError{Kind: TooLarge, Offset: w.pos, Msg: what + " runs past the 512 MiB the header may take"}
	}
	grow := max(int64(len(w.buf))*2, firstRead, end)
	grow = min(grow, w.size, MaxHeaderSize)
	next := make([]byte, grow)
	copy(next, w.buf)
	got, err := w.r.ReadAt(next[len(w.buf):], int64(len(w.buf)))
	w.reads++
	if got < len(next)-len(w.buf) {
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		w.err = err
		return &FormatError{Kind: Truncated, Offset: int64(len(w.buf)) + int64(got), Msg: "reading the header: " + err.Error()}
	}
	w.buf = next
	return nil
}

func (w *window) bytes(n uint64, what string) ([]byte, *FormatError) {
	if err := w.need(n, what); err != nil {
		return nil, err
	}
	b := w.buf[w.pos : w.pos+int64(n)]
	w.pos += int64(n)
	return b, nil
}

func (w *window) u32(what string) (uint32, *FormatError) {
	b, err := w.bytes(4, what)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b), nil
}

func (w *window) u64(what string) (uint64, *FormatError) {
	b, err := w.bytes(8, what)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b), nil
}

// str reads a string: a uint64 length, then its bytes, the length bounded
// by the bytes left before anything is allocated.
func (w *window) str(what string) (string, *FormatError) {
	at := w.pos
	n, err := w.u64(what + "'s length")
	if err != nil {
		return "", err
	}
	if n > w.remain() {
		return "", &FormatError{Kind: TooLarge, Offset: at, Msg: what + " of " + itoa(n) + " bytes is longer than the " + itoa(w.remain()) + " bytes left in the file"}
	}
	b, err := w.bytes(n, what)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// maxDepth bounds nested arrays, so that a header cannot recurse deeply.
const maxDepth = 8

// value reads a value of type t.
func (w *window) value(t ValueType, depth int) (Value, *FormatError) {
	at := w.pos
	v := Value{Type: t}
	switch t {
	case ValueUint8, ValueUint16, ValueUint32, ValueUint64:
		b, err := w.bytes(valueTypeInfo[t].size, "a "+t.String()+" value")
		if err != nil {
			return v, err
		}
		v.v = uintOf(b)
	case ValueInt8, ValueInt16, ValueInt32, ValueInt64:
		b, err := w.bytes(valueTypeInfo[t].size, "a "+t.String()+" value")
		if err != nil {
			return v, err
		}
		v.v = intOf(b)
	case ValueFloat32, ValueFloat64:
		b, err := w.bytes(valueTypeInfo[t].size, "a "+t.String()+" value")
		if err != nil {
			return v, err
		}
		v.v = floatOf(b)
	case ValueBool:
		b, err := w.bytes(1, "a bool value")
		if err != nil {
			return v, err
		}
		v.v = b[0] != 0
	case ValueString:
		s, err := w.str("a string value")
		if err != nil {
			return v, err
		}
		v.v = s
	case ValueArray:
		return w.array(depth)
	default:
		return v, &FormatError{Kind: BadType, Offset: at - 4, Msg: "unknown value type " + itoa(uint64(t))}
	}
	return v, nil
}

// array reads an array's element type, count and elements; the count is
// bounded by the bytes left, at the elements' smallest size, before the
// elements are allocated.
func (w *window) array(depth int) (Value, *FormatError) {
	at := w.pos
	et, err := w.u32("an array's element type")
	if err != nil {
		return Value{}, err
	}
	elem := ValueType(et)
	if !elem.Valid() {
		return Value{}, &FormatError{Kind: BadType, Offset: at, Msg: "unknown array element type " + itoa(uint64(et))}
	}
	if elem == ValueArray && depth >= maxDepth {
		return Value{}, &FormatError{Kind: TooLarge, Offset: at, Msg: "arrays nested deeper than " + itoa(maxDepth)}
	}
	n, err := w.u64("an array's length")
	if err != nil {
		return Value{}, err
	}
	if size := valueTypeInfo[elem].size; n > w.remain()/size {
		return Value{}, &FormatError{Kind: TooLarge, Offset: at + 4, Msg: "an array of " + itoa(n) + " " + elem.String() + " values is larger than the " + itoa(w.remain()) + " bytes left in the file"}
	}
	v := Value{Type: ValueArray, Elem: elem}
	switch elem {
	case ValueString:
		s := make([]string, n)
		for i := range s {
			if s[i], err = w.str("a string in an array"); err != nil {
				return v, err
			}
		}
		v.v = s
	case ValueArray:
		a := make([]Value, n)
		for i := range a {
			if a[i], err = w.array(depth + 1); err != nil {
				return v, err
			}
		}
		v.v = a
	default:
		size := valueTypeInfo[elem].size
		b, err := w.bytes(n*size, "an array of "+elem.String())
		if err != nil {
			return v, err
		}
		v.v = decodeArray(elem, b, int(size))
	}
	return v, nil
}

func decodeArray(t ValueType, b []byte, size int) any {
	n := len(b) / size
	switch t {
	case ValueUint8, ValueUint16, ValueUint32, ValueUint64:
		a := make([]uint64, n)
		for i := range a {
			a[i] = uintOf(b[i*size : (i+1)*size])
		}
		return a
	case ValueInt8, ValueInt16, ValueInt32, ValueInt64:
		a := make([]int64, n)
		for i := range a {
			a[i] = intOf(b[i*size : (i+1)*size])
		}
		return a
	case ValueFloat32, ValueFloat64:
		a := make([]float64, n)
		for i := range a {
			a[i] = floatOf(b[i*size : (i+1)*size])
		}
		return a
	}
	a := make([]bool, n) // ValueBool
	for i := range a {
		a[i] = b[i] != 0
	}
	return a
}

func uintOf(b []byte) uint64 {
	switch len(b) {
	case 1:
		return uint64(b[0])
	case 2:
		return uint64(binary.LittleEndian.Uint16(b))
	case 4:
		return uint64(binary.LittleEndian.Uint32(b))
	}
	return binary.LittleEndian.Uint64(b)
}

func intOf(b []byte) int64 {
	switch len(b) {
	case 1:
		return int64(int8(b[0]))
	case 2:
		return int64(int16(binary.LittleEndian.Uint16(b)))
	case 4:
		return int64(int32(binary.LittleEndian.Uint32(b)))
	}
	return int64(binary.LittleEndian.Uint64(b))
}

func floatOf(b []byte) float64 {
	if len(b) == 4 {
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(b)))
	}
	return math.Float64frombits(binary.LittleEndian.Uint64(b))
}
