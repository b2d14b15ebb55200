package gguf

import (
	"math"
	"strconv"
	"strings"
)

// A Value is a metadata value: a scalar of Type, or (Type ValueArray) an
// array of Elem values, which may be arrays themselves.
type Value struct {
	Type ValueType
	Elem ValueType // the element type of an array; 0 otherwise
	// v is uint64 (unsigned), int64 (signed), float64, bool or string for
	// a scalar; for an array []uint64, []int64, []float64, []bool, []string
	// or []Value (nested arrays), by Elem.
	v any
}

// Uint is an unsigned or non-negative signed integer scalar's value.
func (v Value) Uint() (uint64, bool) {
	switch x := v.v.(type) {
	case uint64:
		return x, true
	case int64:
		return uint64(x), x >= 0
	}
	return 0, false
}

// Int is an integer scalar's value; ok is false for a uint64 above MaxInt64.
func (v Value) Int() (int64, bool) {
	switch x := v.v.(type) {
	case int64:
		return x, true
	case uint64:
		return int64(x), x <= math.MaxInt64
	}
	return 0, false
}

// Float is a numeric scalar's value.
func (v Value) Float() (float64, bool) {
	switch x := v.v.(type) {
	case float64:
		return x, true
	case uint64:
		return float64(x), true
	case int64:
		return float64(x), true
	}
	return 0, false
}

// Bool is a bool scalar's value.
func (v Value) Bool() (b, ok bool) { b, ok = v.v.(bool); return b, ok }

// Str is a string scalar's value.
func (v Value) Str() (string, bool) { s, ok := v.v.(string); return s, ok }

// Strings is a string array's elements. Callers must not modify them.
func (v Value) Strings() ([]string, bool) { s, ok := v.v.([]string); return s, ok }

// Len is an array's length (0 for a scalar).
func (v Value) Len() int {
	switch x := v.v.(type) {
	case []uint64:
		return len(x)
	case []int64:
		return len(x)
	case []float64:
		return len(x)
	case []bool:
		return len(x)
	case []string:
		return len(x)
	case []Value:
		return len(x)
	}
	return 0
}

// Index is element i of an array, 0 <= i < Len().
func (v Value) Index(i int) Value {
	e := Value{Type: v.Elem}
	switch x := v.v.(type) {
	case []uint64:
		e.v = x[i]
	case []int64:
		e.v = x[i]
	case []float64:
		e.v = x[i]
	case []bool:
		e.v = x[i]
	case []string:
		e.v = x[i]
	case []Value:
		return x[i]
	}
	return e
}

// summaryLen is how many elements String shows of an array.
const summaryLen = 8

// String writes a scalar as its value (a string quoted) and an array as
// its first elements and its length: a 151936-token vocabulary is a line,
// not a dump.
func (v Value) String() string {
	switch x := v.v.(type) {
	case uint64:
		return strconv.FormatUint(x, 10)
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		bits := 64
		if v.Type == ValueFloat32 {
			bits = 32
		}
		return strconv.FormatFloat(x, 'g', -1, bits)
	case bool:
		return strconv.FormatBool(x)
	case string:
		return strconv.Quote(x)
	}
	n := v.Len()
	var b strings.Builder
	b.WriteByte('[')
	for i := range min(n, summaryLen) {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(v.Index(i).String())
	}
	if n > summaryLen {
		b.WriteString(", …")
	}
	b.WriteString("] (" + strconv.Itoa(n) + " " + v.Elem.String() + ")")
	return b.String()
}

// A KV is one metadata key/value pair.
type KV struct {
	Key   string
	Value Value
}
