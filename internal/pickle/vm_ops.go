package pickle

// The helpers of the opcodes: counted lengths, memo puts, filling
// containers, calls of allowed globals, longs.

import (
	"encoding/binary"
	"fmt"
	"strings"
)

// lengthWidth is how many bytes an opcode's length or index argument takes.
func lengthWidth(op byte) int {
	switch op {
	case opShortBinUnicode, opShortBinString, opShortBinBytes, opBinPut, opBinGet:
		return 1
	case opBinUnicode8, opBinBytes8, opByteArray8:
		return 8
	}
	return 4
}

// counted reads a string whose length is a width-byte little-endian number.
func (m *machine) counted(width int) ([]byte, error) {
	n, err := m.readUint(width)
	if err != nil {
		return nil, err
	}
	return m.read(n)
}

func (m *machine) put(i uint32) error {
	v, err := m.top()
	if err != nil {
		return err
	}
	if _, ok := m.memo[i]; !ok && len(m.memo) >= m.lim.MaxMemo {
		return m.fail(TooLarge, "more than %d memo entries", m.lim.MaxMemo)
	}
	m.memo[i] = v
	return nil
}

func (m *machine) setItems(target Value, items []Value) error {
	if len(items)%2 != 0 {
		return m.fail(Malformed, "odd number of items")
	}
	pairs := make([]Item, 0, len(items)/2)
	for i := 0; i < len(items); i += 2 {
		pairs = append(pairs, Item{Key: items[i], Value: items[i+1]})
	}
	switch t := target.(type) {
	case *Dict:
		t.Items = append(t.Items, pairs...)
	case *Call:
		t.Items = append(t.Items, pairs...)
	default:
		return m.fail(Malformed, "%s to a %s", opName(m.op), typeName(target))
	}
	return nil
}

func (m *machine) appends() error {
	var items []Value
	if m.op == opAppend {
		v, err := m.pop()
		if err != nil {
			return err
		}
		items = []Value{v}
	} else {
		var err error
		if items, err = m.popMark(); err != nil {
			return err
		}
	}
	t, err := m.top()
	if err != nil {
		return err
	}
	switch t := t.(type) {
	case *List:
		t.Items = append(t.Items, items...)
	case *Call:
		t.Appended = append(t.Appended, items...)
	default:
		return m.fail(Malformed, "%s to a %s", opName(m.op), typeName(t))
	}
	return nil
}

// call records REDUCE, NEWOBJ and NEWOBJ_EX as a *Call of the global on
// the stack, which GLOBAL allowed: nothing is called.
func (m *machine) call() error {
	var kwargs *Dict
	if m.op == opNewObjEx {
		kw, err := m.pop()
		if err != nil {
			return err
		}
		d, ok := kw.(*Dict)
		if !ok {
			return m.fail(Malformed, "keyword arguments are a %s", typeName(kw))
		}
		kwargs = d
	}
	a, err := m.pop()
	if err != nil {
		return err
	}
	args, ok := a.(Tuple)
	if !ok {
		return m.fail(Malformed, "arguments are a %s", typeName(a))
	}
	f, err := m.pop()
	if err != nil {
		return err
	}
	g, ok := f.(Global)
	if !ok {
		return m.unsafe("", "%s of a %s, not of an allowed global", opName(m.op), typeName(f))
	}
	m.push(&Call{Func: g, Args: args, Kwargs: kwargs, New: m.op != opReduce})
	return nil
}

// decodeLong reads a little-endian two's complement integer of at most 8
// bytes, as LONG1 and LONG4 store it.
func decodeLong(b []byte) (int64, bool) {
	if len(b) > 8 {
		return 0, false
	}
	if len(b) == 0 {
		return 0, true
	}
	var buf [8]byte
	if b[len(b)-1]&0x80 != 0 {
		buf = [8]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	}
	copy(buf[:], b)
	return int64(binary.LittleEndian.Uint64(buf[:])), true
}

func typeName(v Value) string {
	switch v := v.(type) {
	case nil:
		return "None"
	case bool:
		return "bool"
	case int64:
		return "int"
	case float64:
		return "float"
	case string:
		return "str"
	case Bytes:
		return "bytes"
	case Tuple:
		return "tuple"
	case *List:
		return "list"
	case *Dict:
		return "dict"
	case *Set:
		return "set"
	case Global:
		return "global " + v.String()
	case *Call:
		return "call of " + v.Func.String()
	case PersistentID:
		return "persistent id"
	}
	return strings.TrimPrefix(fmt.Sprintf("%T", v), "*")
}
