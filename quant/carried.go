package quant

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
)

// A Resolver is a codec whose weight's layout is partly written in the data
// of one of its parts rather than in the headers: compressed-tensors'
// weight_shape (I64 [2], the unpacked shape), bitsandbytes' quant_state
// (U8 JSON: quant type, block size, dtype, shape, nested offset). The
// caller reads that part's bytes — at most MaxMetaBytes, a small bounded
// read — and calls Resolve, which returns the codec to decode with (its
// Parts are the Resolver's, in the same order, so a Binding's part names
// still apply) and the weight's logical shape. Until then the binding's
// Shape is nil.
type Resolver interface {
	Codec
	// MetaPart is the index in Parts of the part Resolve reads.
	MetaPart() int
	// Resolve reads the meta part's bytes.
	Resolve(meta []byte) (Codec, []uint64, error)
}

// MaxMetaBytes bounds the meta part a Resolver reads: a quant state is a
// few hundred bytes of JSON, a weight_shape 16.
const MaxMetaBytes = 1 << 16

// carried is a codec with parts it does not decode but that belong to the
// weight (an input_scale, weight_shape, quant_map, quant_state): listed in
// Parts with their header sizes, named whole by Spans so that a short one
// is an error, and skipped by Decode.
type carried struct {
	inner Codec
	parts []Part
	sizes []uint64 // of the carried parts, after inner's
}

// carry returns c carrying extra parts of the given sizes, interned so that
// one encoding bound twice is one comparable codec.
func carry(c Codec, extra []Part, sizes []uint64) Codec {
	if len(extra) == 0 {
		return c
	}
	key := carriedKey{c, fmt.Sprint(extra, sizes)}
	if v, ok := carriedCodecs.Load(key); ok {
		return v.(Codec)
	}
	cc := &carried{inner: c, parts: append(slices.Clone(c.Parts()), extra...), sizes: slices.Clone(sizes)}
	var nc Codec = cc
	if _, ok := c.(stepper); ok {
		nc = &carriedStepped{cc}
	}
	v, _ := carriedCodecs.LoadOrStore(key, nc)
	return v.(Codec)
}

var carriedCodecs sync.Map // carriedKey → *carried

type carriedKey struct {
	inner Codec // interned itself, or a comparable value
	extra string
}

func (c *carried) String() string { return c.inner.String() }
func (c *carried) Parts() []Part  { return c.parts }
func (c *carried) Tile() Tile     { return c.inner.Tile() }

func (c *carried) Sizes(d Dims, sizes []uint64) error {
	if len(sizes) < len(c.parts) {
		return fmt.Errorf("%s: sizes for %d parts, want %d", c, len(sizes), len(c.parts))
	}
	n := len(c.parts) - len(c.sizes)
	if err := c.inner.Sizes(d, sizes[:n]); err != nil {
		return err
	}
	copy(sizes[n:], c.sizes)
	return nil
}

func (c *carried) Spans(d Dims, r0, r1 uint64, dst []Span) ([]Span, error) {
	dst, err := c.inner.Spans(d, r0, r1, dst)
	if err != nil {
		return dst, err
	}
	n := len(c.parts) - len(c.sizes)
	for i, s := range c.sizes {
		dst = append(dst, whole(n+i, s))
	}
	return dst, nil
}

func (c *carried) Decode(d Dims, r0, r1 uint64, parts [][]byte, dst []float32) error {
	if len(parts) != len(c.parts) {
		return fmt.Errorf("%s: %d parts, want %d", c, len(parts), len(c.parts))
	}
	n := len(c.parts) - len(c.sizes)
	for i, s := range c.sizes {
		if uint64(len(parts[n+i])) < s {
			return fmt.Errorf("%s: part %d (%s) has %d bytes, want %d", c, n+i, c.parts[n+i].Role, len(parts[n+i]), s)
		}
	}
	return c.inner.Decode(d, r0, r1, parts[:n], dst)
}

// stepper is values.Stepper, which quant cannot import.
type stepper interface {
	Steps(d Dims, r0, r1 uint64, parts [][]byte, dst []float32) error
}

// carriedStepped is a carried codec whose inner codec says its steps.
type carriedStepped struct{ *carried }

// Steps are the inner codec's, from its parts.
func (c *carriedStepped) Steps(d Dims, r0, r1 uint64, parts [][]byte, dst []float32) error {
	if len(parts) != len(c.parts) {
		return fmt.Errorf("%s: %d parts, want %d", c, len(parts), len(c.parts))
	}
	return c.inner.(stepper).Steps(d, r0, r1, parts[:len(c.parts)-len(c.sizes)], dst)
}

// resolving is a carried codec whose meta part says the weight's shape
// (resolve) or its encoding.
type resolving struct {
	*carried
	self    Codec // the carried codec resolve reads, with its steps if it states them
	meta    int
	resolve func(c Codec, meta []byte) (Codec, []uint64, error)
}

func (r *resolving) MetaPart() int { return r.meta }
func (r *resolving) Resolve(meta []byte) (Codec, []uint64, error) {
	if len(meta) > MaxMetaBytes {
		return nil, nil, fmt.Errorf("%s: %d bytes of %s, more than %d", r, len(meta), r.parts[r.meta].Role, MaxMetaBytes)
	}
	return r.resolve(r.self, meta)
}

// i64Shape reads compressed-tensors' weight_shape: a few little-endian
// int64 dimensions, each positive.
func i64Shape(what string, b []byte) ([]uint64, error) {
	if len(b) == 0 || len(b)%8 != 0 || len(b) > 8*8 {
		return nil, fmt.Errorf("%s: weight_shape of %d bytes is not 1 to 8 I64 dimensions", what, len(b))
	}
	shape := make([]uint64, len(b)/8)
	for i := range shape {
		v := int64(binary.LittleEndian.Uint64(b[8*i:]))
		if v < 0 {
			return nil, fmt.Errorf("%s: weight_shape dimension %d is %d", what, i, v)
		}
		shape[i] = uint64(v)
	}
	return shape, nil
}
