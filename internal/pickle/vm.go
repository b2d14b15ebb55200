package pickle

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sync"
)

// DefaultMaxDepth is how deep MARKs may nest when Limits.MaxDepth is 0.
const DefaultMaxDepth = 256

// Limits bound a Load beyond what the input's length already bounds.
type Limits struct {
	// MaxDepth is how deep MARKs may nest; 0 is DefaultMaxDepth.
	MaxDepth int
	// MaxMemo is how many memo entries may be stored; 0 is one per input
	// byte, which no real pickle needs.
	MaxMemo int
}

// Budget is the work a walker of a Load's result may spend on it, for a
// pickle of n bytes: a fixed multiple of the input, so that a graph of
// shared references cannot make a walk expand.
func Budget(n int) int { return 16*n + 1024 }

// Load runs the pickle at the start of data and returns the object STOP
// pops and how many bytes the pickle took (the bytes after it are not
// read). allowed says which globals GLOBAL and STACK_GLOBAL may name; a
// nil allowed allows none. Python 2 module names are read as Python 3's
// (__builtin__ is builtins, copy_reg is copyreg), as Python's Unpickler
// does for protocol 2 pickles, before allowed is asked.
func Load(data []byte, allowed func(Global) bool, lim Limits) (Value, int, error) {
	if lim.MaxDepth <= 0 {
		lim.MaxDepth = DefaultMaxDepth
	}
	if lim.MaxMemo <= 0 {
		lim.MaxMemo = len(data)
	}
	if allowed == nil {
		allowed = func(Global) bool { return false }
	}
	m := &machine{data: data, allowed: allowed, lim: lim, memo: map[uint32]Value{}}
	v, err := m.run()
	if err != nil {
		return nil, 0, err
	}
	return v, m.pos, nil
}

type machine struct {
	data    []byte
	pos     int // next byte to read
	at      int // offset of the current opcode
	op      byte
	allowed func(Global) bool
	lim     Limits
	stack   []Value
	marks   []int // stack lengths at each open MARK
	memo    map[uint32]Value
	work    int // elements placed in containers so far, against Budget
}

func (m *machine) fail(kind ErrorKind, format string, args ...any) *Error {
	return &Error{Kind: kind, Offset: m.at, Op: opName(m.op), Msg: fmt.Sprintf(format, args...)}
}

func (m *machine) unsafe(global, format string, args ...any) *Error {
	e := m.fail(Unsafe, format, args...)
	e.Global = global
	return e
}

// read returns the next n bytes, refusing before anything is allocated a
// length that claims more than the input holds.
func (m *machine) read(n uint64) ([]byte, error) {
	if n > uint64(len(m.data)-m.pos) {
		return nil, m.fail(Truncated, "needs %d bytes, %d left", n, len(m.data)-m.pos)
	}
	b := m.data[m.pos : m.pos+int(n)]
	m.pos += int(n)
	return b, nil
}

func (m *machine) readUint(n int) (uint64, error) {
	b, err := m.read(uint64(n))
	if err != nil {
		return 0, err
	}
	var buf [8]byte
	copy(buf[:], b)
	return binary.LittleEndian.Uint64(buf[:]), nil
}

// readLine reads up to a newline, for GLOBAL and INST's names.
func (m *machine) readLine() (string, error) {
	i := slices.Index(m.data[m.pos:], '\n')
	if i < 0 {
		return "", m.fail(Truncated, "no end of line")
	}
	s := string(m.data[m.pos : m.pos+i])
	m.pos += i + 1
	return s, nil
}

// readName reads GLOBAL's and INST's module and name lines.
func (m *machine) readName() (module, name string, err error) {
	if module, err = m.readLine(); err != nil {
		return "", "", err
	}
	name, err = m.readLine()
	return module, name, err
}

func (m *machine) push(v Value) { m.stack = append(m.stack, v) }

// spend counts n elements placed into a container against the input's
// Budget. The VM never copies a memo reference's contents, so its work is
// linear in the input anyway; the count makes that a checked bound.
func (m *machine) spend(n int) error {
	m.work += n
	if m.work > Budget(len(m.data)) {
		return m.fail(TooLarge, "more than %d elements for a pickle of %d bytes", Budget(len(m.data)), len(m.data))
	}
	return nil
}

// floor is the lowest stack index the current MARK lets opcodes pop.
func (m *machine) floor() int {
	if len(m.marks) == 0 {
		return 0
	}
	return m.marks[len(m.marks)-1]
}

func (m *machine) pop() (Value, error) {
	if len(m.stack) <= m.floor() {
		return nil, m.fail(Malformed, "stack underflow")
	}
	v := m.stack[len(m.stack)-1]
	m.stack = m.stack[:len(m.stack)-1]
	return v, nil
}

func (m *machine) top() (Value, error) {
	if len(m.stack) <= m.floor() {
		return nil, m.fail(Malformed, "stack underflow")
	}
	return m.stack[len(m.stack)-1], nil
}

// popMark returns a copy of the items pushed since the last MARK and
// removes them and the MARK.
func (m *machine) popMark() ([]Value, error) {
	if len(m.marks) == 0 {
		return nil, m.fail(Malformed, "no MARK")
	}
	k := m.marks[len(m.marks)-1]
	m.marks = m.marks[:len(m.marks)-1]
	if err := m.spend(len(m.stack) - k); err != nil {
		return nil, err
	}
	items := slices.Clone(m.stack[k:])
	m.stack = m.stack[:k]
	return items, nil
}

// pyModule maps Python 2 module names, as protocol 2 pickles written by
// Python 3 with fix_imports carry them, to Python 3's.
var pyModule = sync.OnceValue(func() map[string]string {
	return map[string]string{"__builtin__": "builtins", "copy_reg": "copyreg"}
})

func (m *machine) global(module, name string) error {
	if v, ok := pyModule()[module]; ok {
		module = v
	}
	g := Global{Module: module, Name: name}
	if !m.allowed(g) {
		return m.unsafe(g.String(), "global not allowed")
	}
	m.push(g)
	return nil
}

func (m *machine) run() (Value, error) {
	for {
		m.at = m.pos
		b, err := m.read(1)
		if err != nil {
			m.op = 0
			return nil, m.fail(Truncated, "no STOP")
		}
		m.op = b[0]
		if m.op == opStop {
			if len(m.marks) > 0 {
				return nil, m.fail(Malformed, "MARK left open")
			}
			v, err := m.pop()
			if err != nil {
				return nil, err
			}
			return v, nil
		}
		if err := m.step(); err != nil {
			return nil, err
		}
	}
}

func (m *machine) step() error {
	switch m.op {
	case opProto:
		v, err := m.readUint(1)
		if err != nil {
			return err
		}
		if v < 2 || v > 5 {
			return m.fail(Malformed, "protocol %d (2 to 5 are read)", v)
		}
	case opFrame:
		n, err := m.readUint(8)
		if err != nil {
			return err
		}
		if n > uint64(len(m.data)-m.pos) {
			return m.fail(Truncated, "frame of %d bytes, %d left", n, len(m.data)-m.pos)
		}
	case opMark:
		if len(m.marks) >= m.lim.MaxDepth {
			return m.fail(TooLarge, "MARKs nested deeper than %d", m.lim.MaxDepth)
		}
		m.marks = append(m.marks, len(m.stack))
	case opPop:
		if len(m.stack) == m.floor() && len(m.marks) > 0 { // POP of a MARK, as CPython does
			m.marks = m.marks[:len(m.marks)-1]
			return nil
		}
		_, err := m.pop()
		return err
	case opPopMark:
		_, err := m.popMark()
		return err
	case opDup:
		v, err := m.top()
		if err != nil {
			return err
		}
		m.push(v)
	case opNone:
		m.push(nil)
	case opNewTrue:
		m.push(true)
	case opNewFalse:
		m.push(false)
	case opBinInt:
		v, err := m.readUint(4)
		if err != nil {
			return err
		}
		m.push(int64(int32(uint32(v))))
	case opBinInt1:
		v, err := m.readUint(1)
		if err != nil {
			return err
		}
		m.push(int64(v))
	case opBinInt2:
		v, err := m.readUint(2)
		if err != nil {
			return err
		}
		m.push(int64(v))
	case opLong1, opLong4:
		width := 1
		if m.op == opLong4 {
			width = 4
		}
		n, err := m.readUint(width)
		if err != nil {
			return err
		}
		b, err := m.read(n)
		if err != nil {
			return err
		}
		v, ok := decodeLong(b)
		if !ok {
			return m.fail(TooLarge, "integer of %d bytes (at most 8 are read)", n)
		}
		m.push(v)
	case opBinFloat:
		b, err := m.read(8)
		if err != nil {
			return err
		}
		m.push(math.Float64frombits(binary.BigEndian.Uint64(b)))
	case opShortBinUnicode, opBinUnicode, opBinUnicode8, opShortBinString, opBinString:
		b, err := m.counted(lengthWidth(m.op))
		if err != nil {
			return err
		}
		m.push(string(b))
	case opShortBinBytes, opBinBytes, opBinBytes8, opByteArray8:
		b, err := m.counted(lengthWidth(m.op))
		if err != nil {
			return err
		}
		m.push(Bytes(slices.Clone(b)))
	case opEmptyTuple:
		m.push(Tuple{})
	case opTuple1, opTuple2, opTuple3:
		n := int(m.op-opTuple1) + 1
		if len(m.stack)-m.floor() < n {
			return m.fail(Malformed, "stack underflow")
		}
		t := slices.Clone(m.stack[len(m.stack)-n:])
		m.stack = append(m.stack[:len(m.stack)-n], Tuple(t))
	case opTuple:
		items, err := m.popMark()
		if err != nil {
			return err
		}
		m.push(Tuple(items))
	case opEmptyList:
		m.push(&List{})
	case opList:
		items, err := m.popMark()
		if err != nil {
			return err
		}
		m.push(&List{Items: items})
	case opEmptyDict:
		m.push(&Dict{})
	case opDict:
		items, err := m.popMark()
		if err != nil {
			return err
		}
		d := &Dict{}
		if err := m.setItems(d, items); err != nil {
			return err
		}
		m.push(d)
	case opEmptySet:
		m.push(&Set{})
	case opFrozenSet:
		items, err := m.popMark()
		if err != nil {
			return err
		}
		m.push(&Set{Items: items, Frozen: true})
	case opAppend, opAppends:
		return m.appends()
	case opSetItem, opSetItems:
		var items []Value
		var err error
		if m.op == opSetItem {
			items = make([]Value, 2)
			if items[1], err = m.pop(); err != nil {
				return err
			}
			if items[0], err = m.pop(); err != nil {
				return err
			}
		} else if items, err = m.popMark(); err != nil {
			return err
		}
		t, err := m.top()
		if err != nil {
			return err
		}
		return m.setItems(t, items)
	case opAddItems:
		items, err := m.popMark()
		if err != nil {
			return err
		}
		t, err := m.top()
		if err != nil {
			return err
		}
		s, ok := t.(*Set)
		if !ok || s.Frozen {
			return m.fail(Malformed, "ADDITEMS to a %s", typeName(t))
		}
		s.Items = append(s.Items, items...)
	case opBinPut, opLongBinPut:
		i, err := m.readUint(lengthWidth(m.op))
		if err != nil {
			return err
		}
		return m.put(uint32(i))
	case opMemoize:
		return m.put(uint32(len(m.memo)))
	case opBinGet, opLongBinGet:
		i, err := m.readUint(lengthWidth(m.op))
		if err != nil {
			return err
		}
		v, ok := m.memo[uint32(i)]
		if !ok {
			return m.fail(Malformed, "memo %d not set", i)
		}
		m.push(v)
	case opGlobal:
		module, name, err := m.readName()
		if err != nil {
			return err
		}
		return m.global(module, name)
	case opStackGlobal:
		name, err := m.pop()
		if err != nil {
			return err
		}
		module, err := m.pop()
		if err != nil {
			return err
		}
		ms, ok1 := module.(string)
		ns, ok2 := name.(string)
		if !ok1 || !ok2 {
			return m.fail(Malformed, "STACK_GLOBAL of a %s and a %s", typeName(module), typeName(name))
		}
		return m.global(ms, ns)
	case opReduce, opNewObj, opNewObjEx:
		return m.call()
	case opBuild:
		state, err := m.pop()
		if err != nil {
			return err
		}
		t, err := m.top()
		if err != nil {
			return err
		}
		c, ok := t.(*Call)
		if !ok {
			return m.fail(Malformed, "BUILD of a %s", typeName(t))
		}
		c.State = state
	case opBinPersID:
		id, err := m.pop()
		if err != nil {
			return err
		}
		m.push(PersistentID{ID: id})
	case opInst:
		module, name, err := m.readName()
		if err != nil {
			return err
		}
		return m.unsafe("INST "+module+"."+name, "INST instantiates a class by name")
	case opObj:
		g := "OBJ"
		if len(m.marks) > 0 && m.marks[len(m.marks)-1] < len(m.stack) {
			if c, ok := m.stack[m.marks[len(m.marks)-1]].(Global); ok {
				g += " " + c.String()
			}
		}
		return m.unsafe(g, "OBJ instantiates a class")
	case opExt1, opExt2, opExt4:
		return m.unsafe(opName(m.op), "the extension registry names globals the pickle does not show")
	case opNextBuffer, opReadonlyBuffer:
		return m.fail(Malformed, "out-of-band buffers are not read")
	default:
		if _, ok := opNames()[m.op]; ok {
			return m.fail(Malformed, "protocol 0 and 1 opcodes are not read")
		}
		return m.fail(Malformed, "unknown opcode")
	}
	return nil
}
