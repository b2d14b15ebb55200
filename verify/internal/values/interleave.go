package values

import (
	"fmt"
	"math/bits"
	"slices"
)

// Interleaved operands: llama.cpp splits gpt-oss's gate_up_proj, whose
// rows alternate gate and up, into ffn_gate_exps and ffn_up_exps. The
// operand's segments hold the two tensors one after the other, and its
// bytes are their rows taken in turn. Every other layer of the engine
// (blocks, tiles, codec spans) works on the operand's byte stream as
// before; only the mapping from that stream to the segments changes, so a
// transposed or block-quantized interleave needs nothing more. The reads
// then alternate between the ways; the scheduler reads them in file order
// (readsched.go), so a band of rows still costs a read a way.

// interleaving is an Operand's Interleave, checked against its segments.
type interleaving struct {
	units    []uint64 // bytes of a unit, by way
	starts   []uint64 // where each way starts in the segment stream
	round    uint64   // bytes of a unit of every way
	smallest uint64   // bytes of the smallest unit
}

// blockSpans bounds the spans il.spans makes room for at once: a block of
// one-byte units.
const blockSpans = 1 << 20

// newInterleaving checks that the total bytes of the segments are ways of
// one number of units each, way w's unit units[w] bytes.
func newInterleaving(units []uint64, total uint64) (*interleaving, error) {
	if len(units) == 0 {
		return nil, fmt.Errorf("interleave of no ways")
	}
	il := &interleaving{units: units, starts: make([]uint64, len(units)), smallest: slices.Min(units)}
	var per uint64
	for _, u := range units {
		if u == 0 {
			return nil, fmt.Errorf("interleave %v: a unit of no bytes", units)
		}
		var c uint64
		if il.round, c = bits.Add64(il.round, u, 0); c != 0 {
			return nil, fmt.Errorf("interleave %v: units overflow", units)
		}
	}
	if il.round == 0 || total%il.round != 0 {
		return nil, fmt.Errorf("interleave %v: %d bytes are not whole rounds of %d", units, total, il.round)
	}
	rounds := total / il.round
	for w, u := range units {
		il.starts[w] = per
		per += rounds * u // at most total
	}
	return il, nil
}

// spans appends the spans of bytes [off, off+n) of the interleaved stream:
// unit by unit, each the piece of its way's stream.
func (il *interleaving) spans(segs []Segment, cum *[]uint64, out []span, off, n uint64) []span {
	out = slices.Grow(out, int(min(n/il.smallest+uint64(len(il.units))+1, blockSpans)))
	for n > 0 {
		r, at := off/il.round, off%il.round
		w := 0
		for at >= il.units[w] {
			at -= il.units[w]
			w++
		}
		take := min(n, il.units[w]-at)
		out = spansOf(segs, cum, out, il.starts[w]+r*il.units[w]+at, take)
		off, n = off+take, n-take
	}
	return out
}

// prepareInterleave checks the operand's Interleave, if any, against the
// bytes its segments (or, for a codec, its one part) hold.
func (o *Operand) prepareInterleave() error {
	o.il = nil
	if len(o.Interleave) == 0 {
		return nil
	}
	segs := o.Segments
	if o.Codec != nil {
		if len(o.Parts) != 1 {
			return fmt.Errorf("interleave of a codec of %d parts", len(o.Parts))
		}
		segs = o.Parts[0]
	}
	il, err := newInterleaving(o.Interleave, segmentsLength(segs))
	if err != nil {
		return err
	}
	o.il = il
	return nil
}
