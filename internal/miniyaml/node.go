package miniyaml

import "fmt"

// A Kind is what a Node is.
type Kind uint8

const (
	Scalar Kind = iota + 1
	Mapping
	Sequence
)

func (k Kind) String() string {
	switch k {
	case Scalar:
		return "scalar"
	case Mapping:
		return "mapping"
	case Sequence:
		return "sequence"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// A Node is a scalar, a mapping or a sequence.
type Node struct {
	Kind Kind
	// Value is a scalar's text, as written for a plain scalar ("true",
	// "1e-3", "~") and unescaped for a quoted one.
	Value string
	// Null is true for a plain scalar that YAML reads as null: empty,
	// "~", "null", "Null" or "NULL". A quoted "null" is a string.
	Null bool
	// Quoted is true for a single- or double-quoted or block scalar.
	Quoted bool
	// Line is where the node starts, from 1.
	Line int
	// Content holds a sequence's items, or a mapping's keys and values
	// alternating (key, value, key, value…), in the file's order.
	Content []*Node
}

// An Error says what is wrong and on which line.
type Error struct {
	Line int
	Msg  string
}

func (e *Error) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Msg) }

// plainNull reports whether a plain scalar is YAML's null.
func plainNull(s string) bool {
	switch s {
	case "", "~", "null", "Null", "NULL":
		return true
	}
	return false
}
