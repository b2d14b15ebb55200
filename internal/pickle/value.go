package pickle

// A Value is what an opcode pushes: nil (None), bool, int64, float64,
// string, Bytes, Tuple, *List, *Dict, *Set, Global, *Call or PersistentID.
type Value = any

// Bytes is a Python bytes or bytearray object.
type Bytes []byte

// A Tuple is a Python tuple.
type Tuple []Value

// A List is a Python list; it is a pointer so that memo references share it.
type List struct{ Items []Value }

// An Item is a key and its value in a *Dict or a *Call's items.
type Item struct{ Key, Value Value }

// A Dict is a Python dict with its items in insertion order. A key set
// twice appears twice; Get returns the last.
type Dict struct{ Items []Item }

// Get returns the value of the string key k: the last one set.
func (d *Dict) Get(k string) (Value, bool) {
	for i := len(d.Items) - 1; i >= 0; i-- {
		if s, ok := d.Items[i].Key.(string); ok && s == k {
			return d.Items[i].Value, true
		}
	}
	return nil, false
}

// A Set is a Python set or frozenset.
type Set struct {
	Items  []Value
	Frozen bool
}

// A Global is a module-level name the pickle refers to, allowed by the
// caller's list: nothing is imported.
type Global struct{ Module, Name string }

func (g Global) String() string { return g.Module + "." + g.Name }

// A Call is what REDUCE (Func(*Args)), NEWOBJ and NEWOBJ_EX (New set: a
// class instantiated) would have built; nothing was called. BUILD sets
// State, SETITEM(S) append to Items and APPEND(S) to Appended, as they
// would have mutated the object (an OrderedDict is a Call of
// collections.OrderedDict with its entries in Items).
type Call struct {
	Func     Global
	Args     Tuple
	Kwargs   *Dict // NEWOBJ_EX's keyword arguments, else nil
	New      bool
	State    Value
	Items    []Item
	Appended []Value
}

// A PersistentID is what PERSID and BINPERSID refer to: an object stored
// outside the pickle (a torch storage), left to the caller to resolve.
type PersistentID struct{ ID Value }
