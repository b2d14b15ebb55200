package safetensors

import (
	"errors"
	"strings"

	"github.com/ckptcheck/ckptcheck/internal/strictjson"
)

// header is what the JSON of one header says, before the layout is checked.
type header struct {
	metadata   map[string]string
	tensors    []*Tensor // in header order; a repeated name keeps its last entry
	byName     nameIndex
	duplicates []string // names given more than once, in order of repetition
}

// parseHeader parses a header with the rules of the reference implementation
// (serde_json into its HashMetadata): strict JSON, an object at the root,
// "__metadata__" at most once as an object of strings or null, and every other
// member a tensor entry. base is the header's offset in the file, for errors.
func parseHeader(b []byte, base int64) (*header, error) {
	if !strictjson.Valid(b) {
		return nil, formatErr(InvalidHeader, base, "", "header is not valid UTF-8")
	}
	// Strings the decoder reads are substrings of b, which the caller frees
	// once the header is parsed: what the header keeps is copied out.
	p := &parser{d: strictjson.NewDecoder(b, base)}
	h, err := p.root()
	var se *strictjson.SyntaxError
	if errors.As(err, &se) {
		return nil, &FormatError{Kind: InvalidHeaderDeserialization, Offset: se.Offset, Msg: se.Msg}
	}
	return h, err
}

type parser struct {
	d     *strictjson.Decoder
	dims  chunks[uint64] // backing arrays for shapes, so a header costs few allocations
	names names          // the tensor names, copied out of the header
}

func (p *parser) root() (*header, error) {
	h := &header{}
	d := p.d
	sawMetadata := false
	if d.Peek() != '{' {
		return nil, d.Fail("header is not a JSON object")
	}
	var entries chunks[Tensor]
	n := 0
	err := d.Members(func(key string) error {
		if key == "__metadata__" {
			if sawMetadata {
				return d.Fail("duplicate field `__metadata__`")
			}
			sawMetadata = true
			return p.metadata(h)
		}
		t := entries.one()
		n++
		var err error
		t.TensorInfo, err = p.tensor(p.names.copy(key))
		return err
	})
	if err != nil {
		return nil, err
	}
	if !d.End() {
		return nil, d.Fail("trailing characters after the header object")
	}
	h.index(entries.all(), n)
	return h, nil
}

// index lists the n entries in header order, a repeated name keeping its
// last entry in the place of its first. The index is built once the
// entries are counted, at its final size.
func (h *header) index(entries [][]Tensor, n int) {
	h.byName = newNameIndex(n)
	h.tensors = make([]*Tensor, 0, n)
	for _, chunk := range entries {
		for i := range chunk {
			t := &chunk[i]
			j, slot, ok := h.byName.find(h.tensors, t.Name)
			if ok {
				*h.tensors[j] = *t
				h.duplicates = append(h.duplicates, t.Name)
				continue
			}
			h.tensors = append(h.tensors, t)
			h.byName.slots[slot] = int32(len(h.tensors))
		}
	}
}

func (p *parser) metadata(h *header) error {
	d := p.d
	switch d.Peek() {
	case 'n':
		return d.Literal("null")
	case '{':
	default:
		return d.Fail("__metadata__ must be an object of strings or null")
	}
	h.metadata = make(map[string]string)
	return d.Members(func(key string) error {
		if d.Peek() != '"' {
			return d.Fail("__metadata__ value for %q is not a string", key)
		}
		v, err := d.Str()
		h.metadata[strings.Clone(key)] = strings.Clone(v)
		return err
	})
}

// tensor parses one tensor entry: an object with dtype, shape and
// data_offsets (other fields ignored, none repeated), or, as serde also
// accepts for a struct, an array of exactly those three in that order.
func (p *parser) tensor(name string) (TensorInfo, error) {
	d := p.d
	t := TensorInfo{Name: name}
	switch d.Peek() {
	case '{':
		var seen [3]bool
		err := d.Members(func(key string) error {
			field := -1
			switch key {
			case "dtype":
				field = 0
			case "shape":
				field = 1
			case "data_offsets":
				field = 2
			default:
				return d.Skip()
			}
			if seen[field] {
				return d.Fail("tensor %q: duplicate field `%s`", name, key)
			}
			seen[field] = true
			return p.field(&t, field)
		})
		if err != nil {
			return t, err
		}
		for i, field := range [3]string{"dtype", "shape", "data_offsets"} {
			if !seen[i] {
				return t, d.Fail("tensor %q: missing field `%s`", name, field)
			}
		}
		return t, nil
	case '[':
		count := 0
		err := d.Elements(func(n int) error {
			if n >= 3 {
				return d.Fail("tensor %q: more than 3 elements", name)
			}
			count++
			return p.field(&t, n)
		})
		if err == nil && count != 3 {
			err = d.Fail("tensor %q: expected 3 elements, got %d", name, count)
		}
		return t, err
	default:
		return t, d.Fail("tensor %q: entry is not an object", name)
	}
}

func (p *parser) field(t *TensorInfo, field int) error {
	d := p.d
	switch field {
	case 0:
		if d.Peek() != '"' {
			return d.Fail("tensor %q: dtype is not a string", t.Name)
		}
		s, err := d.Str()
		if err != nil {
			return err
		}
		dt, ok := ParseDType(s)
		if !ok && s == "" {
			// torch.distributed.checkpoint's consolidation writes this empty
			// entry (dtype "", shape [], data_offsets [o, o]) for a key of the
			// published index that the model never produced (torchtitan
			// PR #3764, a tied lm_head.weight).
			return d.Fail("tensor %q: empty dtype \"\": an entry with dtype \"\", shape [] and no bytes is what torchtitan writes for a key of the published index its model never produced (pytorch/torchtitan#3764)", t.Name)
		}
		if !ok {
			return d.Fail("tensor %q: unknown dtype %q", t.Name, s)
		}
		t.DType = dt
	case 1:
		start := p.dims.mark()
		err := d.Elements(func(int) error {
			v, err := d.Uint()
			start = p.dims.push(start, v)
			return err
		})
		// Shape [] is a scalar, not a missing shape: keep it non-nil.
		t.Shape = p.dims.run(start)
		if t.Shape == nil {
			t.Shape = []uint64{}
		}
		return err
	case 2:
		n := 0
		err := d.Elements(func(i int) error {
			if i >= 2 {
				return d.Fail("tensor %q: data_offsets has more than 2 elements", t.Name)
			}
			v, err := d.Uint()
			t.DataOffsets[i] = v
			n++
			return err
		})
		if err == nil && n != 2 {
			err = d.Fail("tensor %q: data_offsets has %d elements, want 2", t.Name, n)
		}
		return err
	}
	return nil
}
