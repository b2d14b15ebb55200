// Package strictjson is a small, allocation-light JSON decoder with
// serde_json's strictness: the grammar of RFC 8259 and nothing more, no lone
// surrogates, nesting below MaxDepth, numbers that overflow float64 refused.
//
// It is the scanner under the safetensors header parser and the index.json
// parser: both read tens of thousands of entries, where encoding/json's
// reflection costs several times more. Callers drive it member by member
// (Members, Elements) and read values with Str, Uint, Skip.
package strictjson

import (
	"fmt"
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// MaxDepth is serde_json's recursion limit: input whose arrays and objects
// nest this deep is rejected.
const MaxDepth = 128

// A SyntaxError is input that breaks the grammar or a caller's expectation,
// at byte Offset (counted from the Decoder's base).
type SyntaxError struct {
	Offset int64
	Msg    string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("%s (at byte %d)", e.Msg, e.Offset) }

// A Decoder reads one JSON text from memory.
type Decoder struct {
	b     []byte
	s     string // b as a string: strings without escapes are substrings of it, not copies
	i     int
	depth int
	base  int64
}

// NewDecoder returns a decoder over b, which must be valid UTF-8 and must not
// change while strings read from it are in use: strings without escapes
// share b's memory. base is added to offsets in errors.
func NewDecoder(b []byte, base int64) *Decoder {
	return &Decoder{b: b, s: unsafe.String(unsafe.SliceData(b), len(b)), base: base}
}

// Valid reports whether b is UTF-8, which NewDecoder requires.
func Valid(b []byte) bool { return utf8.Valid(b) }

// Offset is the cursor's position, counted from the base.
func (d *Decoder) Offset() int64 { return d.base + int64(d.i) }

// Fail returns a SyntaxError at the cursor.
func (d *Decoder) Fail(format string, args ...any) *SyntaxError {
	return &SyntaxError{Offset: d.Offset(), Msg: fmt.Sprintf(format, args...)}
}

func (d *Decoder) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// Peek skips whitespace and returns the next byte, or 0 at the end.
func (d *Decoder) Peek() byte {
	d.ws()
	if d.i < len(d.b) {
		return d.b[d.i]
	}
	return 0
}

// End skips whitespace and reports whether the input is exhausted.
func (d *Decoder) End() bool {
	d.ws()
	return d.i >= len(d.b)
}

func (d *Decoder) expect(c byte) error {
	if d.Peek() != c {
		if d.i >= len(d.b) {
			return d.Fail("unexpected end of input, expected %q", c)
		}
		return d.Fail("expected %q, found %q", c, d.b[d.i])
	}
	d.i++
	return nil
}

// Members calls fn for each member of the object at the cursor, with the
// cursor on the member's value; fn must consume the value.
func (d *Decoder) Members(fn func(key string) error) error {
	return d.sequence('{', '}', "object", func(int) error {
		if d.Peek() != '"' {
			return d.Fail("expected an object key")
		}
		key, err := d.Str()
		if err != nil {
			return err
		}
		if err := d.expect(':'); err != nil {
			return err
		}
		return fn(key)
	})
}

// Elements calls fn for each element of the array at the cursor; fn must
// consume the element.
func (d *Decoder) Elements(fn func(n int) error) error {
	return d.sequence('[', ']', "array", fn)
}

// sequence parses open, items separated by commas, then close, one nesting
// level deeper.
func (d *Decoder) sequence(open, close byte, what string, item func(n int) error) error {
	d.depth++
	if d.depth >= MaxDepth {
		return d.Fail("nesting deeper than %d", MaxDepth-1)
	}
	if err := d.expect(open); err != nil {
		return err
	}
	if d.Peek() == close {
		d.i++
		d.depth--
		return nil
	}
	for n := 0; ; n++ {
		if err := item(n); err != nil {
			return err
		}
		switch d.Peek() {
		case ',':
			d.i++
		case close:
			d.i++
			d.depth--
			return nil
		default:
			return d.Fail("expected ',' or '%c' in %s", close, what)
		}
	}
}

// Uint reads a JSON number that must be an integer in [0, 2^64-1], as serde
// requires for usize: no sign, fraction or exponent.
func (d *Decoder) Uint() (uint64, error) {
	d.ws()
	start := d.i
	var v uint64
	i := d.i
	for ; i < len(d.b) && d.b[i] >= '0' && d.b[i] <= '9'; i++ {
		digit := uint64(d.b[i] - '0')
		if v > (math.MaxUint64-digit)/10 {
			return 0, d.Fail("integer out of range for 64 bits")
		}
		v = v*10 + digit
	}
	// Anything that is not plain digits (a sign, fraction, exponent, leading
	// zero) is still checked as a JSON number, then rejected as not an integer.
	if i == start || (d.b[start] == '0' && i > start+1) || (i < len(d.b) && (d.b[i] == '.' || d.b[i] == 'e' || d.b[i] == 'E')) {
		if _, err := d.Number(); err != nil {
			return 0, err
		}
		d.i = start
		return 0, d.Fail("expected a non-negative integer")
	}
	d.i = i
	return v, nil
}

// Number consumes a JSON number with strict grammar and returns its text.
func (d *Decoder) Number() (string, error) {
	d.ws()
	b, i := d.b, d.i
	start := i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
		if i < len(b) && b[i] >= '0' && b[i] <= '9' {
			d.i = i
			return "", d.Fail("invalid number: leading zero")
		}
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		d.i = i
		return "", d.Fail("invalid number")
	}
	integer := true
	if i < len(b) && b[i] == '.' {
		integer = false
		i++
		digits := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == digits {
			d.i = i
			return "", d.Fail("invalid number: no digits after '.'")
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		integer = false
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		digits := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == digits {
			d.i = i
			return "", d.Fail("invalid number: no digits in exponent")
		}
	}
	d.i = i
	if !integer {
		// serde_json rejects a float that overflows to infinity.
		if f, err := strconv.ParseFloat(d.s[start:i], 64); err != nil && (f > 1 || f < -1) {
			d.i = start
			return "", d.Fail("number out of range")
		}
	}
	return d.s[start:i], nil
}

// Literal consumes the literal word (true, false, null).
func (d *Decoder) Literal(word string) error {
	d.ws()
	if len(d.b)-d.i < len(word) || d.s[d.i:d.i+len(word)] != word {
		return d.Fail("invalid literal")
	}
	d.i += len(word)
	return nil
}

// Skip consumes any JSON value, checking it as strictly as serde_json does
// when it buffers the value (strings are decoded, so lone surrogates fail).
func (d *Decoder) Skip() error {
	switch c := d.Peek(); {
	case c == '{':
		return d.Members(func(string) error { return d.Skip() })
	case c == '[':
		return d.Elements(func(int) error { return d.Skip() })
	case c == '"':
		_, err := d.Str()
		return err
	case c == 't':
		return d.Literal("true")
	case c == 'f':
		return d.Literal("false")
	case c == 'n':
		return d.Literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		_, err := d.Number()
		return err
	case c == 0:
		return d.Fail("unexpected end of input")
	default:
		return d.Fail("unexpected character %q", c)
	}
}

// Str reads the JSON string at the cursor (after whitespace).
func (d *Decoder) Str() (string, error) {
	if d.Peek() != '"' {
		return "", d.Fail("expected a string")
	}
	d.i++ // opening quote
	start := d.i
	b := d.b
	// Fast path: no escapes, the string is a substring of the input.
	for d.i < len(b) {
		c := b[d.i]
		if c == '"' {
			s := d.s[start:d.i]
			d.i++
			return s, nil
		}
		if c == '\\' {
			break
		}
		if c < 0x20 {
			return "", d.Fail("control character in string")
		}
		d.i++
	}
	buf := append([]byte(nil), b[start:d.i]...)
	for d.i < len(b) {
		c := b[d.i]
		switch {
		case c == '"':
			d.i++
			return string(buf), nil
		case c < 0x20:
			return "", d.Fail("control character in string")
		case c != '\\':
			buf = append(buf, c)
			d.i++
			continue
		}
		d.i++
		if d.i >= len(b) {
			break
		}
		e := b[d.i]
		d.i++
		switch e {
		case '"', '\\', '/':
			buf = append(buf, e)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			r, err := d.hex4()
			if err != nil {
				return "", err
			}
			if utf16.IsSurrogate(r) {
				if r >= 0xDC00 || d.i+1 >= len(b) || b[d.i] != '\\' || b[d.i+1] != 'u' {
					return "", d.Fail("lone surrogate in \\u escape")
				}
				d.i += 2
				r2, err := d.hex4()
				if err != nil {
					return "", err
				}
				if r2 < 0xDC00 || r2 > 0xDFFF {
					return "", d.Fail("lone surrogate in \\u escape")
				}
				r = utf16.DecodeRune(r, r2)
			}
			buf = utf8.AppendRune(buf, r)
		default:
			return "", d.Fail("invalid escape")
		}
	}
	return "", d.Fail("unterminated string")
}

func (d *Decoder) hex4() (rune, error) {
	if len(d.b)-d.i < 4 {
		return 0, d.Fail("invalid \\u escape")
	}
	var r rune
	for _, c := range d.b[d.i : d.i+4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, d.Fail("invalid \\u escape")
		}
	}
	d.i += 4
	return r, nil
}
