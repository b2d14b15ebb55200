package adapter

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/ckptcheck/ckptcheck/safetensors"
)

// checkLayout rejects a tensor whose bytes overflow 64 bits or whose
// layout would need more than maxSegments pieces.
func checkLayout(t Tensor, pieces uint64) error {
	n, ok := (safetensors.TensorInfo{Shape: t.Shape}).NumElements()
	if hi, _ := bits.Mul64(n, uint64(t.DType.Bits()/8)); !ok || hi != 0 {
		return fmt.Errorf("shape %s overflows", safetensors.FormatShape(t.Shape))
	}
	if pieces > maxSegments {
		return fmt.Errorf("shape %s would need %d pieces, more than %d", safetensors.FormatShape(t.Shape), pieces, maxSegments)
	}
	return nil
}

// mapTensor applies a rename, unstack, split or permute rule to t,
// appending what it makes to out and reserving in b the work it makes
// (errLimit when there is no room). On an error, what it appended is
// garbage: the caller cuts out back.
func (r *rule) mapTensor(out []Tensor, t Tensor, caps map[string]string, env Env, b *budget) ([]Tensor, error) {
	if r.kind == opFlatten {
		return r.flattened(out, t, caps, env)
	}
	if r.kind == opRename || r.kind == opTranspose {
		name, err := r.dst[0].expandEnv(caps, env)
		if err != nil {
			return out, err
		}
		t.Name = name
		if r.kind == opTranspose {
			if t, err = transposed(t); err != nil {
				return out, err
			}
		}
		return append(out, t), nil
	}
	if t.DType.Bits()%8 != 0 {
		return out, fmt.Errorf("%s elements are smaller than a byte; only renames apply", t.DType)
	}
	if err := checkLayout(t, 0); err != nil {
		return out, err
	}
	// A transposed tensor's leading dimensions are stored as they are; the
	// last two are swapped, so cuts there would take the wrong bytes.
	cut := r.dim // split
	switch r.kind {
	case opUnstack:
		cut = 0
		if len(r.dst) > 1 {
			cut = max(cut, 1+r.dim) // each slice is split along its dim r.dim
		}
	case opPermute:
		cut = 0
	}
	if t.Interleave != nil {
		return out, fmt.Errorf("%s is read interleaved from %d tensors; it cannot be cut", t.Source, len(t.Interleave))
	}
	if tiled(t) {
		return out, fmt.Errorf("%s holds tiles stored transposed; it cannot be cut", t.Source)
	}
	if t.Transposed && cut >= len(t.Shape)-2 {
		return out, fmt.Errorf("shape %s is stored transposed; it can be cut only along its leading dimensions, not dimension %d",
			safetensors.FormatShape(t.Shape), cut)
	}
	switch r.kind {
	case opUnstack:
		return r.unstack(out, t, caps, env, b)
	case opSplit:
		return r.split(out, t, caps, env, r.dim, b)
	case opPermute:
		return r.permute(out, t, caps, env, b)
	}
	return out, fmt.Errorf("not a mapping")
}

// transposed swaps the last two dimensions of t: no bytes move, the
// segments are read as the transpose (or, for a tensor stored transposed,
// as they are).
func transposed(t Tensor) (Tensor, error) {
	if tiled(t) {
		return t, fmt.Errorf("%s holds tiles stored transposed; it cannot be transposed whole", t.Source)
	}
	n := len(t.Shape)
	if n < 2 {
		return t, fmt.Errorf("shape %s has fewer than two dimensions to transpose", safetensors.FormatShape(t.Shape))
	}
	if t.DType.Bits()%8 != 0 {
		return t, fmt.Errorf("%s elements are smaller than a byte; only renames apply", t.DType)
	}
	t.Shape = slices.Clone(t.Shape)
	t.Shape[n-2], t.Shape[n-1] = t.Shape[n-1], t.Shape[n-2]
	t.Transposed = !t.Transposed
	t.Source += ".mT"
	return t, nil
}

// unstack makes one tensor per slice along dim 0, each split further when
// the rule has several outputs.
func (r *rule) unstack(out []Tensor, t Tensor, caps map[string]string, env Env, b *budget) ([]Tensor, error) {
	if len(t.Shape) < 2 {
		return out, fmt.Errorf("shape %s has no dimension to unstack", safetensors.FormatShape(t.Shape))
	}
	if t.Shape[0] > maxSlices {
		return out, fmt.Errorf("%d slices to unstack, more than %d", t.Shape[0], maxSlices)
	}
	inner := t.Shape[1:]
	slice := uint64(t.DType.Bits()/8) * product(inner)
	made := t.Shape[0] * uint64(len(r.dst)) // tensors, each of a piece or, when empty, none
	pieces := made
	if slice == 0 {
		pieces = 0
	}
	if !b.reserve(made, pieces) {
		return out, errLimit
	}
	src := newSlicer(t.Segments)
	out = slices.Grow(out, int(made))
	for e := range t.Shape[0] {
		index := strconv.FormatUint(e, 10)
		piece := Tensor{DType: t.DType, Shape: inner, Segments: src.appendRange(nil, e*slice, slice),
			Source: t.Source + "[" + index + "]", Transposed: t.Transposed, Add: t.Add}
		caps["{e}"] = index
		var err error
		if len(r.dst) == 1 {
			if piece.Name, err = r.dst[0].expandEnv(caps, env); err != nil {
				return out, err
			}
			out = append(out, piece)
			continue
		}
		if out, err = r.split(out, piece, caps, env, r.dim, nil); err != nil {
			return out, err
		}
	}
	return out, nil
}

// permute reorders rows from torchtitan's rotary order to HF's.
func (r *rule) permute(out []Tensor, t Tensor, caps map[string]string, env Env, b *budget) ([]Tensor, error) {
	heads, err := r.heads.eval(env, false)
	if err != nil {
		return out, err
	}
	if len(t.Shape) < 1 || heads <= 0 || t.Shape[0]%uint64(heads) != 0 || (t.Shape[0]/uint64(heads))%2 != 0 {
		return out, fmt.Errorf("%s rows are not a multiple of 2 x heads (%d)", safetensors.FormatShape(t.Shape), heads)
	}
	rows, h := t.Shape[0], uint64(heads)
	half := rows / h / 2
	row := uint64(t.DType.Bits()/8) * product(t.Shape[1:])
	if t.Name, err = r.dst[0].expandEnv(caps, env); err != nil {
		return out, err
	}
	if row == 0 { // no bytes to reorder
		return append(out, t), nil
	}
	if err := checkLayout(t, rows); err != nil {
		return out, err
	}
	if !b.reserve(1, rows) {
		return out, errLimit
	}
	src := newSlicer(t.Segments)
	segs := make([]Segment, 0, rows)
	// HF row (h, b, a) is native row (h, a, b) of the [heads, half, 2] view.
	for hh := range h {
		for b := range uint64(2) {
			for a := range half {
				segs = src.appendRange(segs, (hh*2*half+2*a+b)*row, row)
			}
		}
	}
	t.Segments = segs
	return append(out, t), nil
}

// split cuts t along dim into len(r.dst) parts: the dimension holds
// `groups` repeats of blocks of r.sizes (equal parts by default). b, when
// not nil, gets the work reserved; unstack reserves its own.
func (r *rule) split(out []Tensor, t Tensor, caps map[string]string, env Env, dim int, b *budget) ([]Tensor, error) {
	if dim >= len(t.Shape) {
		return out, fmt.Errorf("shape %s has no dimension %d", safetensors.FormatShape(t.Shape), dim)
	}
	groups := int64(1)
	if r.groups != nil {
		var err error
		if groups, err = r.groups.eval(env, false); err != nil {
			return out, err
		}
	}
	n := t.Shape[dim]
	if groups <= 0 || n%uint64(groups) != 0 {
		return out, fmt.Errorf("dimension %d (%d) is not %d groups", dim, n, groups)
	}
	block := n / uint64(groups)
	sizes := make([]uint64, len(r.dst))
	var total uint64
	for i := range sizes {
		if r.sizes == nil {
			if block%uint64(len(r.dst)) != 0 {
				return out, fmt.Errorf("dimension %d (%d) does not split into %d equal parts", dim, n, len(r.dst))
			}
			sizes[i] = block / uint64(len(r.dst))
		} else {
			v, err := r.sizes[i].eval(env, false)
			if err != nil {
				return out, err
			}
			if v <= 0 {
				return out, fmt.Errorf("size %s is %d", r.sizes[i].text, v)
			}
			sizes[i] = uint64(v)
		}
		if sizes[i] > block-total {
			return out, fmt.Errorf("dimension %d is %d: %d groups of %d, fewer than the sizes make", dim, n, groups, block)
		}
		total += sizes[i]
	}
	if total != block {
		return out, fmt.Errorf("dimension %d is %d: %d groups of %d, but the sizes make %d", dim, n, groups, block, total)
	}
	outer := product(t.Shape[:dim])
	inner := uint64(t.DType.Bits()/8) * product(t.Shape[dim+1:])
	if inner == 0 || n == 0 {
		outer = 0 // no bytes: every part is empty
	}
	pieces := outer * uint64(groups) // fits: at most the elements
	if err := checkLayout(t, pieces); err != nil {
		return out, err
	}
	if b != nil && !b.reserve(uint64(len(r.dst)), pieces*uint64(len(r.dst))) {
		return out, errLimit
	}
	src := newSlicer(t.Segments)
	var offset uint64
	for i, size := range sizes {
		var segs []Segment
		for o := range outer {
			for g := range uint64(groups) {
				segs = src.appendRange(segs, (o*n+g*block+offset)*inner, size*inner)
			}
		}
		shape := append([]uint64(nil), t.Shape...)
		shape[dim] = size * uint64(groups)
		name, err := r.dst[i].expandEnv(caps, env)
		if err != nil {
			return out, err
		}
		out = append(out, Tensor{Name: name, DType: t.DType, Shape: shape, Segments: segs, Transposed: t.Transposed, Add: t.Add,
			Source: t.Source + "[" + describeCut(dim, len(t.Shape), groups, offset, size, block) + "]"})
		offset += size
	}
	return out, nil
}

func describeCut(dim, rank int, groups int64, offset, size, block uint64) string {
	parts := make([]string, rank)
	for i := range parts {
		parts[i] = ":"
	}
	if groups == 1 {
		parts[dim] = fmt.Sprintf("%d:%d", offset, offset+size)
	} else {
		parts[dim] = fmt.Sprintf("%d groups of %d: %d:%d", groups, block, offset, offset+size)
	}
	return strings.Join(parts, ", ")
}

// concat joins tensors along dim, in the order given; all other
// dimensions must agree. With every > 0, the parts are of one shape, and
// the joined dim takes every of each part's in turn.
func concat(parts []Tensor, dim int, every int64, b *budget) (Tensor, error) {
	first := parts[0]
	if dim >= len(first.Shape) {
		return Tensor{}, fmt.Errorf("shape %s has no dimension %d", safetensors.FormatShape(first.Shape), dim)
	}
	if first.DType.Bits()%8 != 0 {
		return Tensor{}, fmt.Errorf("%s elements are smaller than a byte; only renames apply", first.DType)
	}
	rows := len(first.Shape) - 2 // the dimension a tensor read transposed joins others along, as tiles
	anyTransposed := slices.ContainsFunc(parts, func(p Tensor) bool { return p.Transposed })
	tiles := anyTransposed && dim == rows && every == 0
	if anyTransposed && dim >= rows && !tiles {
		return Tensor{}, fmt.Errorf("shape %s is stored transposed; it can be joined only along its leading dimensions or its rows, not dimension %d",
			safetensors.FormatShape(first.Shape), dim)
	}
	shape := append([]uint64(nil), first.Shape...)
	shape[dim] = 0
	sources := make([]string, len(parts))
	for i, p := range parts {
		if p.Interleave != nil {
			return Tensor{}, fmt.Errorf("%s is read interleaved from %d tensors; it cannot be joined again", p.Source, len(p.Interleave))
		}
		if every > 0 && (p.Shape[dim] != first.Shape[dim] || p.Shape[dim]%uint64(every) != 0) {
			return Tensor{}, fmt.Errorf("cannot take %d of %s and %s along dimension %d in turn", every,
				safetensors.FormatShape(first.Shape), safetensors.FormatShape(p.Shape), dim)
		}
		if tiled(p) {
			return Tensor{}, fmt.Errorf("%s holds tiles stored transposed; it cannot be joined again", p.Source)
		}
		if p.Transposed != first.Transposed && !tiles {
			return Tensor{}, fmt.Errorf("cannot join a tensor stored transposed with one that is not, but along its rows")
		}
		if p.Add != first.Add {
			return Tensor{}, fmt.Errorf("cannot join tensors whose stored values are shifted differently (add %g and %g)", first.Add, p.Add)
		}
		if p.DType != first.DType || len(p.Shape) != len(first.Shape) {
			return Tensor{}, fmt.Errorf("cannot join %s %s with %s %s", first.DType, safetensors.FormatShape(first.Shape), p.DType, safetensors.FormatShape(p.Shape))
		}
		for d := range p.Shape {
			if d != dim && p.Shape[d] != first.Shape[d] {
				return Tensor{}, fmt.Errorf("cannot join %s with %s along dimension %d", safetensors.FormatShape(first.Shape), safetensors.FormatShape(p.Shape), dim)
			}
		}
		if err := checkLayout(p, 0); err != nil {
			return Tensor{}, err
		}
		var carry uint64
		if shape[dim], carry = bits.Add64(shape[dim], p.Shape[dim], 0); carry != 0 {
			return Tensor{}, fmt.Errorf("joined dimension %d overflows", dim)
		}
		sources[i] = p.Source
	}
	joined := Tensor{DType: first.DType, Shape: shape, Source: strings.Join(sources, "+"), Transposed: first.Transposed, Add: first.Add}
	inner := uint64(first.DType.Bits()/8) * product(first.Shape[dim+1:])
	if every > 0 {
		return interleaved(joined, parts, dim, uint64(every), inner, b)
	}
	if tiles {
		// A transposed part's matrices become tiles read transposed
		// between the others' rows: the joined tensor is read as it comes.
		joined.Transposed = false
		joined.Source = "join(" + strings.ReplaceAll(joined.Source, "+", ", ") + fmt.Sprintf(" along dim %d, tiles transposed)", dim)
	}
	outer := product(first.Shape[:dim])
	if inner == 0 || shape[dim] == 0 {
		outer = 0 // no bytes
	}
	pieces := uint64(math.MaxUint64)
	if hi, lo := bits.Mul64(outer, uint64(len(parts))); hi == 0 {
		pieces = lo
	}
	if err := checkLayout(joined, pieces); err != nil {
		return Tensor{}, err
	}
	if !b.reserve(1, pieces) {
		return Tensor{}, errLimit
	}
	srcs := make([]slicer, len(parts))
	for i, p := range parts {
		srcs[i] = newSlicer(p.Segments)
	}
	for o := range outer {
		for i, p := range parts {
			n := p.Shape[dim] * inner
			if !tiles || !p.Transposed {
				joined.Segments = srcs[i].appendRange(joined.Segments, o*n, n)
				continue
			}
			tile := srcs[i].appendRange(nil, o*n, n) // matrix o, stored [cols, rows]
			if len(tile) != 1 {
				return Tensor{}, fmt.Errorf("%s: matrix %d is stored in %d pieces; a tile read transposed must be one", p.Source, o, len(tile))
			}
			tile[0].Transposed = true
			joined.Segments = append(joined.Segments, tile[0])
		}
	}
	return joined, nil
}

// interleaved is the join of parts along dim taking every of each part's
// rows (of inner bytes) in turn: the tensor keeps its parts' segments,
// whole, and reads them a unit of every rows at a time (Tensor.Interleave).
func interleaved(joined Tensor, parts []Tensor, dim int, every, inner uint64, b *budget) (Tensor, error) {
	var pieces uint64
	for _, p := range parts {
		pieces += uint64(len(p.Segments))
	}
	if inner == 0 || joined.Shape[dim] == 0 || product(joined.Shape[:dim]) == 0 {
		return joined, nil // no bytes
	}
	if err := checkLayout(joined, pieces); err != nil {
		return Tensor{}, err
	}
	if !b.reserve(1, pieces) {
		return Tensor{}, errLimit
	}
	for _, p := range parts {
		joined.Segments = append(joined.Segments, p.Segments...)
		joined.Interleave = append(joined.Interleave, every*inner) // at most the part's bytes
	}
	joined.Source = "interleave(" + strings.ReplaceAll(joined.Source, "+", ", ") + fmt.Sprintf("; %d along dim %d)", every, dim)
	return joined, nil
}

// tiled reports a tensor with a segment stored transposed.
func tiled(t Tensor) bool {
	return slices.ContainsFunc(t.Segments, func(s Segment) bool { return s.Transposed })
}

// flattened merges dimensions r.flatten of t into one, its elements in
// their order.
func (r *rule) flattened(out []Tensor, t Tensor, caps map[string]string, env Env) ([]Tensor, error) {
	first, last, n := r.flatten[0], r.flatten[1], len(t.Shape)
	if last == 0 {
		first, last = 0, 1 // the default
	}
	switch {
	case last >= n:
		return out, fmt.Errorf("shape %s has no dimension %d", safetensors.FormatShape(t.Shape), last)
	case t.Transposed && last >= n-2:
		return out, fmt.Errorf("shape %s is stored transposed; only its leading dimensions flatten, not dimension %d", safetensors.FormatShape(t.Shape), last)
	case tiled(t) && last == n-1:
		return out, fmt.Errorf("%s holds tiles stored transposed; its last dimension does not flatten", t.Source)
	}
	if err := checkLayout(t, 0); err != nil {
		return out, err
	}
	name, err := r.dst[0].expandEnv(caps, env)
	if err != nil {
		return out, err
	}
	shape := append(slices.Clone(t.Shape[:first]), product(t.Shape[first:last+1])) // checkLayout: no overflow
	t.Name, t.Shape = name, append(shape, t.Shape[last+1:]...)
	t.Source += fmt.Sprintf(".flatten(%d, %d)", first, last)
	return append(out, t), nil
}

func product(dims []uint64) uint64 {
	n := uint64(1)
	for _, d := range dims {
		n *= d
	}
	return n
}

// A slicer cuts byte ranges out of the tensor that segs make up. For a
// tensor of many segments it finds the first by binary search, so that
// cutting a permuted tensor into rows is not quadratic.
type slicer struct {
	segs []Segment
	ends []uint64 // ends[i]: the byte after segs[i]; nil for a few segments
}

func newSlicer(segs []Segment) slicer {
	s := slicer{segs: segs}
	if len(segs) > 8 {
		s.ends = make([]uint64, len(segs))
		var end uint64
		for i, g := range segs {
			end += g.Length
			s.ends[i] = end
		}
	}
	return s
}

// appendRange appends the segments holding bytes [off, off+n) to dst,
// merging pieces that continue each other in the same physical tensor.
func (s slicer) appendRange(dst []Segment, off, n uint64) []Segment {
	i, base := 0, uint64(0)
	if s.ends != nil {
		i = sort.Search(len(s.ends), func(k int) bool { return s.ends[k] > off })
		if i > 0 {
			base = s.ends[i-1]
		}
	}
	for ; i < len(s.segs) && n > 0; i++ {
		g := s.segs[i]
		if off >= base+g.Length {
			base += g.Length
			continue
		}
		within := off - base
		take := min(n, g.Length-within)
		m := Segment{Source: g.Source, Offset: g.Offset + within, Length: take}
		if k := len(dst) - 1; k >= 0 && dst[k].Source == m.Source && dst[k].Offset+dst[k].Length == m.Offset && !dst[k].Transposed {
			dst[k].Length += m.Length
		} else {
			dst = append(dst, m)
		}
		off, n, base = off+take, n-take, base+g.Length
	}
	return dst
}
