package safetensors

import (
	"fmt"
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// maxDepth is serde_json's recursion limit: the reference rejects a header
// whose arrays and objects nest this deep.
const maxDepth = 128

// header is what the JSON of one header says, before the layout is checked.
type header struct {
	metadata   map[string]string
	tensors    []TensorInfo // in header order; a repeated name keeps its last entry
	index      map[string]int
	duplicates []string // names given more than once, in order of repetition
}

// parseHeader parses a header with the rules of the reference implementation
// (serde_json into its HashMetadata): strict JSON, an object at the root,
// "__metadata__" at most once as an object of strings or null, and every other
// member a tensor entry. base is the header's offset in the file, for errors.
func parseHeader(b []byte, base int64) (*header, error) {
	if !utf8.Valid(b) {
		return nil, formatErr(InvalidHeader, base, "", "header is not valid UTF-8")
	}
	// Names are substrings of the header, which is never written after it is
	// read: viewing it as a string saves a copy per header and per name.
	p := &parser{b: b, s: unsafe.String(unsafe.SliceData(b), len(b)), base: base}
	h, err := p.root()
	if err != nil {
		return nil, err
	}
	return h, nil
}

type parser struct {
	b     []byte
	s     string // b as a string: names without escapes are substrings of it, not copies
	i     int
	depth int
	base  int64
	dims  []uint64 // backing array for shapes, so a header costs few allocations
}

func (p *parser) fail(format string, args ...any) *FormatError {
	return formatErr(InvalidHeaderDeserialization, p.base+int64(p.i), "", format, args...)
}

func (p *parser) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// peek skips whitespace and returns the next byte, or 0 at the end.
func (p *parser) peek() byte {
	p.ws()
	if p.i < len(p.b) {
		return p.b[p.i]
	}
	return 0
}

func (p *parser) expect(c byte) error {
	if p.peek() != c {
		if p.i >= len(p.b) {
			return p.fail("unexpected end of header, expected %q", c)
		}
		return p.fail("expected %q, found %q", c, p.b[p.i])
	}
	p.i++
	return nil
}

// parseIndexJSON reads an index.json: an object whose "weight_map" maps
// tensor names to file names and whose "metadata" may hold "total_size".
// It uses the header's strict parser, which is several times faster than
// encoding/json on the ~20,000-entry indexes of large MoE models.
func parseIndexJSON(b []byte) (weightMap map[string]string, totalSize *uint64, err error) {
	if !utf8.Valid(b) {
		return nil, nil, fmt.Errorf("not UTF-8")
	}
	p := &parser{b: b, s: unsafe.String(unsafe.SliceData(b), len(b))}
	if p.peek() != '{' {
		return nil, nil, fmt.Errorf("not a JSON object")
	}
	err = p.members(func(key string) error {
		switch key {
		case "weight_map":
			if p.peek() != '{' {
				return fmt.Errorf("weight_map is not an object")
			}
			weightMap = make(map[string]string, len(p.b)/96) // ~70 bytes an entry
			return p.members(func(name string) error {
				if p.peek() != '"' {
					return fmt.Errorf("weight_map value for %q is not a string", name)
				}
				file, err := p.str()
				weightMap[name] = file
				return err
			})
		case "metadata":
			if p.peek() != '{' {
				return p.skip()
			}
			return p.members(func(k string) error {
				if k != "total_size" || p.peek() < '0' || p.peek() > '9' {
					return p.skip()
				}
				start := p.i
				v, err := p.uint()
				if err != nil { // a float total_size, as some writers emit
					p.i = start
					if err = p.number(); err == nil {
						var f float64
						if f, err = strconv.ParseFloat(string(p.b[start:p.i]), 64); err == nil && f < 1<<63 {
							v = uint64(f)
						}
					}
				}
				totalSize = &v
				return err
			})
		}
		return p.skip()
	})
	if err == nil {
		if p.ws(); p.i < len(p.b) {
			err = fmt.Errorf("trailing characters after the object")
		}
	}
	if err == nil && weightMap == nil {
		err = fmt.Errorf("no weight_map object")
	}
	if err != nil {
		return nil, nil, err
	}
	return weightMap, totalSize, nil
}

func (p *parser) enter() error {
	p.depth++
	if p.depth >= maxDepth {
		return p.fail("nesting deeper than %d", maxDepth-1)
	}
	return nil
}

func (p *parser) leave() { p.depth-- }

// members calls fn for each member of the object that starts at the cursor,
// with the cursor on the member's value.
func (p *parser) members(fn func(key string) error) error {
	return p.sequence('{', '}', "object", func(int) error {
		if p.peek() != '"' {
			return p.fail("expected an object key")
		}
		key, err := p.str()
		if err != nil {
			return err
		}
		if err := p.expect(':'); err != nil {
			return err
		}
		return fn(key)
	})
}

// elements calls fn for each element of the array that starts at the cursor.
func (p *parser) elements(fn func(n int) error) error {
	return p.sequence('[', ']', "array", fn)
}

// sequence parses open, items separated by commas, then close, one nesting
// level deeper.
func (p *parser) sequence(open, close byte, what string, item func(n int) error) error {
	if err := p.enter(); err != nil {
		return err
	}
	if err := p.expect(open); err != nil {
		return err
	}
	if p.peek() == close {
		p.i++
		p.leave()
		return nil
	}
	for n := 0; ; n++ {
		if err := item(n); err != nil {
			return err
		}
		switch p.peek() {
		case ',':
			p.i++
		case close:
			p.i++
			p.leave()
			return nil
		default:
			return p.fail("expected ',' or '%c' in %s", close, what)
		}
	}
}

func (p *parser) root() (*header, error) {
	// About 100 header bytes per tensor; the header is already in memory,
	// so this hint is bounded by its size.
	h := &header{index: make(map[string]int, len(p.b)/128), tensors: make([]TensorInfo, 0, len(p.b)/128)}
	p.dims = make([]uint64, 0, len(p.b)/64)
	index := h.index
	sawMetadata := false
	if p.peek() != '{' {
		return nil, p.fail("header is not a JSON object")
	}
	err := p.members(func(key string) error {
		if key == "__metadata__" {
			if sawMetadata {
				return p.fail("duplicate field `__metadata__`")
			}
			sawMetadata = true
			return p.metadata(h)
		}
		t, err := p.tensor(key)
		if err != nil {
			return err
		}
		if i, ok := index[key]; ok {
			h.tensors[i] = t
			h.duplicates = append(h.duplicates, key)
			return nil
		}
		index[key] = len(h.tensors)
		h.tensors = append(h.tensors, t)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if p.ws(); p.i < len(p.b) {
		return nil, p.fail("trailing characters after the header object")
	}
	return h, nil
}

func (p *parser) metadata(h *header) error {
	switch p.peek() {
	case 'n':
		return p.literal("null")
	case '{':
	default:
		return p.fail("__metadata__ must be an object of strings or null")
	}
	h.metadata = make(map[string]string)
	return p.members(func(key string) error {
		if p.peek() != '"' {
			return p.fail("__metadata__ value for %q is not a string", key)
		}
		v, err := p.str()
		if err != nil {
			return err
		}
		h.metadata[key] = v
		return nil
	})
}

// tensor parses one tensor entry: an object with dtype, shape and
// data_offsets (other fields ignored, none repeated), or, as serde also
// accepts for a struct, an array of exactly those three in that order.
func (p *parser) tensor(name string) (TensorInfo, error) {
	t := TensorInfo{Name: name}
	switch p.peek() {
	case '{':
		var seen [3]bool
		err := p.members(func(key string) error {
			field := -1
			switch key {
			case "dtype":
				field = 0
			case "shape":
				field = 1
			case "data_offsets":
				field = 2
			default:
				return p.skip()
			}
			if seen[field] {
				return p.fail("tensor %q: duplicate field `%s`", name, key)
			}
			seen[field] = true
			return p.field(&t, field)
		})
		if err != nil {
			return t, err
		}
		for i, field := range [3]string{"dtype", "shape", "data_offsets"} {
			if !seen[i] {
				return t, p.fail("tensor %q: missing field `%s`", name, field)
			}
		}
		return t, nil
	case '[':
		count := 0
		err := p.elements(func(n int) error {
			if n >= 3 {
				return p.fail("tensor %q: more than 3 elements", name)
			}
			count++
			return p.field(&t, n)
		})
		if err == nil && count != 3 {
			err = p.fail("tensor %q: expected 3 elements, got %d", name, count)
		}
		return t, err
	default:
		return t, p.fail("tensor %q: entry is not an object", name)
	}
}

func (p *parser) field(t *TensorInfo, field int) error {
	switch field {
	case 0:
		if p.peek() != '"' {
			return p.fail("tensor %q: dtype is not a string", t.Name)
		}
		s, err := p.str()
		if err != nil {
			return err
		}
		d, ok := ParseDType(s)
		if !ok {
			return p.fail("tensor %q: unknown dtype %q", t.Name, s)
		}
		t.DType = d
	case 1:
		start := len(p.dims)
		err := p.elements(func(int) error {
			v, err := p.uint()
			p.dims = append(p.dims, v)
			return err
		})
		// Shape [] is a scalar, not a missing shape: keep it non-nil.
		t.Shape = p.dims[start:len(p.dims):len(p.dims)]
		if t.Shape == nil {
			t.Shape = []uint64{}
		}
		return err
	case 2:
		n := 0
		err := p.elements(func(i int) error {
			if i >= 2 {
				return p.fail("tensor %q: data_offsets has more than 2 elements", t.Name)
			}
			v, err := p.uint()
			t.DataOffsets[i] = v
			n++
			return err
		})
		if err == nil && n != 2 {
			err = p.fail("tensor %q: data_offsets has %d elements, want 2", t.Name, n)
		}
		return err
	}
	return nil
}

// uint parses a JSON number that must be an integer in [0, 2^64-1], as serde
// requires for usize: no sign, fraction or exponent.
func (p *parser) uint() (uint64, error) {
	p.ws()
	start := p.i
	var v uint64
	i := p.i
	for ; i < len(p.b) && p.b[i] >= '0' && p.b[i] <= '9'; i++ {
		d := uint64(p.b[i] - '0')
		if v > (math.MaxUint64-d)/10 {
			return 0, p.fail("integer out of range for 64 bits")
		}
		v = v*10 + d
	}
	// Anything that is not plain digits (a sign, fraction, exponent, leading
	// zero) is still checked as a JSON number, then rejected as not an integer.
	if i == start || (p.b[start] == '0' && i > start+1) || (i < len(p.b) && (p.b[i] == '.' || p.b[i] == 'e' || p.b[i] == 'E')) {
		if err := p.number(); err != nil {
			return 0, err
		}
		p.i = start
		return 0, p.fail("expected a non-negative integer")
	}
	p.i = i
	return v, nil
}

// number consumes a JSON number with strict grammar.
func (p *parser) number() error {
	b, i := p.b, p.i
	start := i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
		if i < len(b) && b[i] >= '0' && b[i] <= '9' {
			p.i = i
			return p.fail("invalid number: leading zero")
		}
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		p.i = i
		return p.fail("invalid number")
	}
	integer := true
	if i < len(b) && b[i] == '.' {
		integer = false
		i++
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == d {
			p.i = i
			return p.fail("invalid number: no digits after '.'")
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		integer = false
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == d {
			p.i = i
			return p.fail("invalid number: no digits in exponent")
		}
	}
	p.i = i
	if !integer {
		// serde_json rejects a float that overflows to infinity.
		if f, err := strconv.ParseFloat(string(b[start:i]), 64); err != nil && (f > 1 || f < -1) {
			p.i = start
			return p.fail("number out of range")
		}
	}
	return nil
}

func (p *parser) literal(word string) error {
	p.ws()
	if len(p.b)-p.i < len(word) || string(p.b[p.i:p.i+len(word)]) != word {
		return p.fail("invalid literal")
	}
	p.i += len(word)
	return nil
}

// skip consumes any JSON value, checking it as strictly as serde_json does
// when it buffers the value (strings are decoded, so lone surrogates fail).
func (p *parser) skip() error {
	switch c := p.peek(); {
	case c == '{':
		return p.members(func(string) error { return p.skip() })
	case c == '[':
		return p.elements(func(int) error { return p.skip() })
	case c == '"':
		_, err := p.str()
		return err
	case c == 't':
		return p.literal("true")
	case c == 'f':
		return p.literal("false")
	case c == 'n':
		return p.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	case c == 0:
		return p.fail("unexpected end of header")
	default:
		return p.fail("unexpected character %q", c)
	}
}

// str parses a JSON string at the cursor. The input is valid UTF-8 already.
func (p *parser) str() (string, error) {
	p.i++ // opening quote
	start := p.i
	b := p.b
	// Fast path: no escapes.
	for p.i < len(b) {
		c := b[p.i]
		if c == '"' {
			var s string
			if p.s != "" {
				s = p.s[start:p.i]
			} else {
				s = string(b[start:p.i])
			}
			p.i++
			return s, nil
		}
		if c == '\\' {
			break
		}
		if c < 0x20 {
			return "", p.fail("control character in string")
		}
		p.i++
	}
	buf := append([]byte(nil), b[start:p.i]...)
	for p.i < len(b) {
		c := b[p.i]
		switch {
		case c == '"':
			p.i++
			return string(buf), nil
		case c < 0x20:
			return "", p.fail("control character in string")
		case c != '\\':
			buf = append(buf, c)
			p.i++
			continue
		}
		p.i++
		if p.i >= len(b) {
			break
		}
		e := b[p.i]
		p.i++
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
			r, err := p.hex4()
			if err != nil {
				return "", err
			}
			if utf16.IsSurrogate(r) {
				if r >= 0xDC00 || p.i+1 >= len(b) || b[p.i] != '\\' || b[p.i+1] != 'u' {
					return "", p.fail("lone surrogate in \\u escape")
				}
				p.i += 2
				r2, err := p.hex4()
				if err != nil {
					return "", err
				}
				if r2 < 0xDC00 || r2 > 0xDFFF {
					return "", p.fail("lone surrogate in \\u escape")
				}
				r = utf16.DecodeRune(r, r2)
			}
			buf = utf8.AppendRune(buf, r)
		default:
			return "", p.fail("invalid escape")
		}
	}
	return "", p.fail("unterminated string")
}

func (p *parser) hex4() (rune, error) {
	if len(p.b)-p.i < 4 {
		return 0, p.fail("invalid \\u escape")
	}
	var r rune
	for _, c := range p.b[p.i : p.i+4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, p.fail("invalid \\u escape")
		}
	}
	p.i += 4
	return r, nil
}
