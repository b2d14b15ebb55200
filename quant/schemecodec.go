package quant

import (
	"sync"

	"github.com/ckptcheck/ckptcheck/internal/strictjson"
	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// What the schemes share to turn a binding's Unsupported placeholder into a
// decoding codec: configs read with the bounded JSON reader, codecs
// interned so that one encoding is one comparable codec, and the parts
// arranged in the codec's order.

var internedCodecs sync.Map // any comparable config → Codec

// intern returns the codec of key, made once by mk.
func intern(key any, mk func() (Codec, error)) (Codec, error) {
	if c, ok := internedCodecs.Load(key); ok {
		return c.(Codec), nil
	}
	c, err := mk()
	if err != nil {
		return nil, err
	}
	v, _ := internedCodecs.LoadOrStore(key, c)
	return v.(Codec), nil
}

// configMembers calls fn for each member of the config object (nil or
// "null" config: none); fn must consume the value.
func configMembers(config []byte, fn func(key string, d *strictjson.Decoder) error) error {
	if len(config) == 0 || string(config) == "null" {
		return nil
	}
	if !strictjson.Valid(config) {
		return &strictjson.SyntaxError{Msg: "quantization config is not UTF-8"}
	}
	d := strictjson.NewDecoder(config, 0)
	return d.Members(func(key string) error { return fn(key, d) })
}

// jsonBool reads true or false.
func jsonBool(d *strictjson.Decoder) (bool, error) {
	if d.Peek() == 't' {
		return true, d.Literal("true")
	}
	return false, d.Literal("false")
}

// jsonUints reads an array of at most max unsigned integers.
func jsonUints(d *strictjson.Decoder, max int) ([]uint64, error) {
	var out []uint64
	err := d.Elements(func(n int) error {
		if n >= max {
			return d.Fail("more than %d numbers", max)
		}
		v, err := d.Uint()
		out = append(out, v)
		return err
	})
	return out, err
}

// jsonGroupSize reads a group size, −1 (one group a row) being 0.
func jsonGroupSize(d *strictjson.Decoder) (uint64, error) {
	if d.Peek() == '-' {
		s, err := d.Number()
		if err == nil && s != "-1" {
			return 0, d.Fail("group size %s", s)
		}
		return 0, err
	}
	return d.Uint()
}

// tensorBytes is a tensor's size in bytes, ok false when it overflows or
// its dtype is not whole bytes.
func tensorBytes(t *tensorfile.TensorInfo) (uint64, bool) {
	if t.DType.Bits()%8 != 0 || t.DType.Bits() == 0 {
		return 0, false
	}
	n := uint64(t.DType.Bits() / 8)
	for _, s := range t.Shape {
		var ok bool
		if n, ok = mul(n, s); !ok {
			return 0, false
		}
	}
	return n, true
}

// numel is a tensor's element count, 0 on overflow.
func numel(t *tensorfile.TensorInfo) uint64 {
	n := uint64(1)
	for _, s := range t.Shape {
		var ok bool
		if n, ok = mul(n, s); !ok {
			return 0
		}
	}
	return n
}

// realize makes codec the binding's, its parts the layout's parts at
// decoded (0 the data) followed by the present ones among carried, which
// the codec carries undecoded. It keeps the placeholder, and returns false,
// when a present part's dtype is not the codec's: a combination the codec
// does not decode. When meta (a layout index among carried) is present and
// resolve is set, the codec is a Resolver reading it.
func realize(b *Binding, infos []*tensorfile.TensorInfo, codec Codec, decoded, carriedParts []int, meta int,
	resolve func(c Codec, meta []byte) (Codec, []uint64, error)) bool {
	placeholder, ok := b.Codec.(*Unsupported)
	if !ok {
		return false
	}
	want := codec.Parts()
	if len(want) != len(decoded) {
		return false
	}
	names := make([]string, 0, len(decoded)+len(carriedParts))
	for i, k := range decoded {
		if infos[k] != nil && infos[k].DType != want[i].DType {
			return false
		}
		names = append(names, b.Parts[k])
	}
	var extra []Part
	var sizes []uint64
	metaAt := -1
	for _, k := range carriedParts {
		if infos[k] == nil {
			continue
		}
		size, ok := tensorBytes(infos[k])
		if !ok {
			return false
		}
		if k == meta {
			metaAt = len(names)
		}
		extra, sizes = append(extra, Part{placeholder.Layout[k].Role, infos[k].DType}), append(sizes, size)
		names = append(names, b.Parts[k])
	}
	c := carry(codec, extra, sizes)
	if metaAt >= 0 && resolve != nil {
		cc, ok := c.(*carried)
		if cs, stepped := c.(*carriedStepped); stepped {
			cc, ok = cs.carried, true
		}
		if !ok {
			return false
		}
		c = internResolving(cc, c, metaAt, resolve)
	}
	b.Codec, b.Parts = c, names
	return true
}

var resolvingCodecs sync.Map // *carried → *resolving

// internResolving makes c (which is cc, or cc stating its steps) a
// Resolver; resolve is given c.
func internResolving(cc *carried, c Codec, meta int, resolve func(Codec, []byte) (Codec, []uint64, error)) Codec {
	if v, ok := resolvingCodecs.Load(cc); ok {
		return v.(Codec)
	}
	v, _ := resolvingCodecs.LoadOrStore(cc, &resolving{carried: cc, self: c, meta: meta, resolve: resolve})
	return v.(Codec)
}
