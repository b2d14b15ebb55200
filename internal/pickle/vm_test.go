package pickle

import (
	"encoding/hex"
	"errors"
	"io"
	"strings"
	"testing"
)

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func allow(names ...string) func(Global) bool {
	return func(g Global) bool {
		for _, n := range names {
			if g.String() == n {
				return true
			}
		}
		return false
	}
}

// Written by CPython 3.11's pickle.dumps (protocols 2 and 5).
const (
	// OrderedDict([('a', 1), ('b', [1.5, None, True, b'xy', (1, 2, 3), -300,
	// 2**40, {'k': 'v'}, frozenset(), {1}])]), protocol 2.
	orderedDictP2 = "800263636f6c6c656374696f6e730a4f726465726564446963740a7100295271012858010000006171024b0158010000006271035d710428473ff80000000000004e88635f636f646563730a656e636f64650a710558020000007879710658060000006c6174696e3171078671085271094b014b024b0387710a4ad4feffff8a060000000000017d710b58010000006b710c580100000076710d73635f5f6275696c74696e5f5f0a66726f7a656e7365740a710e5d710f857110527111635f5f6275696c74696e5f5f0a7365740a71125d71134b016185711452711565752e"
	// {'x': ('ééé', -1, 70000)}, protocol 5.
	dictP5 = "8005951d000000000000007d948c0178948c06c3a9c3a9c3a9944affffffff4a701101008794732e"
	// An object whose __reduce__ is (os.system, ('echo pwned',)).
	systemP2 = "800263706f7369780a73797374656d0a7100580a0000006563686f2070776e656471018571025271032e"
	systemP4 = "80049525000000000000008c05706f736978948c0673797374656d9493948c0a6563686f2070776e656494859452942e"
)

func TestLoadCPython(t *testing.T) {
	data := mustHex(t, orderedDictP2)
	v, n, err := Load(data, allow("collections.OrderedDict", "_codecs.encode", "builtins.set", "builtins.frozenset"), Limits{})
	if err != nil || n != len(data) {
		t.Fatalf("Load = %v, %d, %v", v, n, err)
	}
	od, ok := v.(*Call)
	if !ok || od.Func != (Global{"collections", "OrderedDict"}) || len(od.Items) != 2 {
		t.Fatalf("got %#v", v)
	}
	if od.Items[0].Key != "a" || od.Items[0].Value != int64(1) {
		t.Errorf("item a = %#v", od.Items[0])
	}
	l := od.Items[1].Value.(*List).Items
	if len(l) != 10 || l[0] != 1.5 || l[1] != nil || l[2] != true || l[5] != int64(-300) || l[6] != int64(1<<40) {
		t.Errorf("list = %#v", l)
	}
	if tu := l[4].(Tuple); len(tu) != 3 || tu[2] != int64(3) {
		t.Errorf("tuple = %#v", tu)
	}
	if d := l[7].(*Dict); len(d.Items) != 1 {
		t.Errorf("dict = %#v", d)
	} else if v, _ := d.Get("k"); v != "v" {
		t.Errorf("dict k = %#v", v)
	}
	if s := l[9].(*Call); s.Func.String() != "builtins.set" {
		t.Errorf("set = %#v (protocol 2 writes __builtin__.set)", s)
	}

	data = mustHex(t, dictP5)
	v, _, err = Load(data, nil, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	x, _ := v.(*Dict).Get("x")
	if tu := x.(Tuple); tu[0] != "ééé" || tu[1] != int64(-1) || tu[2] != int64(70000) {
		t.Errorf("x = %#v", x)
	}
}

func TestLoadStopsAtStop(t *testing.T) {
	data := append(mustHex(t, dictP5), "garbage"...)
	_, n, err := Load(data, nil, Limits{})
	if err != nil || n != len(data)-len("garbage") {
		t.Fatalf("Load = %d, %v", n, err)
	}
}

// Hostile pickles: each must be refused with the right kind, naming what
// it refused. The VM has no way to call anything, so refusal is the whole
// proof that nothing ran; a stand-in allow-list that accepts everything
// shows that even an allowed global only becomes an inert *Call.
func TestLoadRefuses(t *testing.T) {
	long := strings.Repeat("(", DefaultMaxDepth+1)
	tests := []struct {
		name   string
		data   []byte
		kind   ErrorKind
		global string
	}{
		{"REDUCE of posix.system", mustHex(t, systemP2), Unsafe, "posix.system"},
		{"STACK_GLOBAL of posix.system", mustHex(t, systemP4), Unsafe, "posix.system"},
		{"GLOBAL builtins.eval", []byte("\x80\x02c__builtin__\neval\n)R."), Unsafe, "builtins.eval"},
		{"STACK_GLOBAL subprocess.Popen", []byte("\x80\x04\x8c\x0asubprocess\x8c\x05Popen\x93)R."), Unsafe, "subprocess.Popen"},
		{"INST", []byte("(X\x02\x00\x00\x00idios\nsystem\n."), Unsafe, "INST os.system"},
		{"OBJ", []byte("(c__builtin__\nobject\no."), Unsafe, "builtins.object"},
		{"EXT1", []byte("\x80\x02\x82\x01)R."), Unsafe, "EXT1"},
		{"REDUCE of a non-global", []byte("\x80\x02X\x01\x00\x00\x00f)R."), Unsafe, ""},
		{"unknown opcode", []byte("\x80\x02\xff."), Malformed, ""},
		{"protocol 0 opcode", []byte("I1\n."), Malformed, ""},
		{"protocol 9", []byte("\x80\x09N."), Malformed, ""},
		{"stack underflow", []byte("\x80\x02t."), Malformed, ""},
		{"DUP below MARK", []byte("N(2."), Malformed, ""},
		{"MARK left open", []byte("N(."), Malformed, ""},
		{"missing memo", []byte("\x80\x02h\x05."), Malformed, ""},
		{"BUILD of a dict", []byte("\x80\x02}Nb."), Malformed, ""},
		{"APPEND to a dict", []byte("\x80\x02}Na."), Malformed, ""},
		{"string claiming 4 GiB", []byte("\x80\x02X\xff\xff\xff\xffabc."), Truncated, ""},
		{"BINUNICODE8 claiming 2^63", []byte("\x80\x04\x8d\x00\x00\x00\x00\x00\x00\x00\x80abc."), Truncated, ""},
		{"bytes claiming 4 GiB", []byte("\x80\x03B\xff\xff\xff\xff."), Truncated, ""},
		{"frame claiming more than present", []byte("\x80\x04\x95\x00\x00\x00\x00\x01\x00\x00\x00N."), Truncated, ""},
		{"no STOP", []byte("\x80\x02N"), Truncated, ""},
		{"empty", nil, Truncated, ""},
		{"MARKs nested too deep", []byte(long + "."), TooLarge, ""},
		{"huge integer", []byte("\x80\x02\x8a\x09123456789."), TooLarge, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, n, err := Load(tt.data, allow("builtins.object"), Limits{})
			var pe *Error
			if !errors.As(err, &pe) || v != nil || n != 0 {
				t.Fatalf("Load = %v, %d, %v; want a *pickle.Error", v, n, err)
			}
			if pe.Kind != tt.kind || !strings.Contains(pe.Global, tt.global) {
				t.Errorf("error %v: kind %v global %q; want %v %q", err, pe.Kind, pe.Global, tt.kind, tt.global)
			}
			if tt.kind == Truncated && !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("a truncated pickle is not io.ErrUnexpectedEOF: %v", err)
			}
			if tt.global != "" && !strings.Contains(err.Error(), tt.global) {
				t.Errorf("error %q does not name %s", err, tt.global)
			}
		})
	}
}

// A memo bomb: a list, then k rounds of "a list holding the previous one
// twice". A tree walk of it would visit 2^k lists; the VM builds k+1.
func TestMemoBombStaysSmall(t *testing.T) {
	b := []byte("\x80\x02]r\x00\x00\x00\x00")
	for i := range 200 {
		// MARK, get i twice, LIST, put i+1 (LONG_BINGET, LONG_BINPUT)
		b = append(b, '(', 'j', byte(i), 0, 0, 0, 'j', byte(i), 0, 0, 0, 'l', 'r', byte(i+1), 0, 0, 0)
	}
	b = append(b, '.')
	v, _, err := Load(b, nil, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	l, depth := v.(*List), 0
	for len(l.Items) == 2 {
		if l.Items[0] != l.Items[1] {
			t.Fatal("memo references were copied, not shared")
		}
		l, depth = l.Items[0].(*List), depth+1
	}
	if depth != 200 {
		t.Errorf("depth %d", depth)
	}
}

// Work is counted against the input's Budget; a list appended to itself
// again and again stays within it, since no reference is copied.
func TestWorkBudget(t *testing.T) {
	b := []byte("\x80\x02]q\x00")
	for range 100 {
		b = append(b, '(', 'h', 0, 'h', 0, 'h', 0, 'h', 0, 'h', 0, 'h', 0, 'h', 0, 'h', 0, 'e')
	}
	b = append(b, '.')
	if _, _, err := Load(b, nil, Limits{}); err != nil {
		t.Fatalf("a linear pickle was refused: %v", err)
	}
	if Budget(len(b)) < 100*9 {
		t.Fatal("budget too small for the test")
	}
}

func TestMemoLimit(t *testing.T) {
	b := []byte("\x80\x04N")
	for range 10 {
		b = append(b, 0x94)
	}
	b = append(b, '.')
	var pe *Error
	if _, _, err := Load(b, nil, Limits{MaxMemo: 5}); !errors.As(err, &pe) || pe.Kind != TooLarge {
		t.Fatalf("Load = %v; want too_large", err)
	}
}

func FuzzLoad(f *testing.F) {
	for _, s := range []string{orderedDictP2, dictP5, systemP2, systemP4} {
		f.Add(mustHex(f, s))
	}
	f.Add([]byte("\x80\x02]q\x00(h\x00h\x00e."))
	f.Fuzz(func(t *testing.T, data []byte) {
		v, n, err := Load(data, allow("collections.OrderedDict", "builtins.set"), Limits{})
		if err != nil {
			var pe *Error
			if !errors.As(err, &pe) || v != nil || n != 0 {
				t.Fatalf("Load = %v, %d, %v", v, n, err)
			}
			return
		}
		if n < 1 || n > len(data) || data[n-1] != '.' {
			t.Fatalf("consumed %d of %d", n, len(data))
		}
	})
}
