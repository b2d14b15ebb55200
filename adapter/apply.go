package adapter

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ckptcheck/ckptcheck/safetensors"
)

// Apply maps physical tensors through the chain to the logical view. env
// gives rule expressions their config values.
func (c Chain) Apply(tensors []safetensors.TensorInfo, env Env) *View {
	cur := make([]Tensor, len(tensors))
	segments := make([]Segment, len(tensors)) // one backing array: most tensors are one segment
	for i, t := range tensors {
		segments[i] = Segment{Source: i, Length: t.Size()}
		cur[i] = Tensor{Name: t.Name, DType: t.DType, Shape: t.Shape, Source: t.Name, Segments: segments[i : i+1 : i+1]}
	}
	v := &View{Adapter: c.Name()}
	for _, a := range c {
		cur = a.apply(cur, env, v)
	}
	v.Tensors = make([]Tensor, 0, len(cur))
	v.byName = make(map[string]int, len(cur))
	var collided map[string]int
	for _, t := range cur {
		j, ok := v.byName[t.Name]
		if !ok {
			v.byName[t.Name] = len(v.Tensors)
			v.Tensors = append(v.Tensors, t)
			continue
		}
		if collided == nil {
			collided = make(map[string]int)
		}
		k, seen := collided[t.Name]
		if !seen {
			k = len(v.Collisions)
			collided[t.Name] = k
			v.Collisions = append(v.Collisions, Collision{Name: t.Name, Sources: []string{v.Tensors[j].Source}})
		}
		v.Collisions[k].Sources = append(v.Collisions[k].Sources, t.Source)
	}
	return v
}

// apply runs one adapter over the tensors: rewrites in order, then the first
// mapping that matches; a tensor no mapping matches passes through.
func (a *Adapter) apply(in []Tensor, env Env, v *View) []Tensor {
	if len(a.rules) == 0 {
		return in
	}
	out := make([]Tensor, 0, len(in))
	var byName map[string]int // for concat, built on first use
	consumed := map[int]bool{}
	caps := map[string]string{}
	for i, t := range in {
		if consumed[i] {
			continue
		}
		name := t.Name
		var segs []string
		mapped := false
		for _, r := range a.rules {
			if r.kind.rewrite() {
				name = r.rewrite(name)
				segs = nil
				continue
			}
			if r.src[0].rejects(name) {
				continue
			}
			if segs == nil {
				segs = strings.Split(name, ".")
			}
			clear(caps)
			if !r.src[0].match(name, segs, caps) {
				continue
			}
			mapped = true
			where := a.Name + ":" + strconv.Itoa(r.line) + ": " + r.text
			fail := func(format string, args ...any) {
				v.Errors = append(v.Errors, RuleError{Name: t.Source, Rule: where, Message: fmt.Sprintf(format, args...)})
			}
			t.Name = name
			switch r.kind {
			case opIgnore:
				v.Ignored = append(v.Ignored, t.Source)
			case opDrop:
				v.Dropped = append(v.Dropped, Dropped{Name: t.Source, Reason: r.reason, Rule: where})
			case opConcat:
				if byName == nil {
					byName = make(map[string]int, len(in))
					for j, u := range in {
						byName[u.Name] = j
					}
				}
				parts := []Tensor{t}
				var idx []int
				for _, p := range r.src[1:] {
					j, ok := byName[expandPattern(p, caps)]
					if !ok {
						fail("no %s to join", expandPattern(p, caps))
						parts = nil
						break
					}
					parts = append(parts, in[j])
					idx = append(idx, j)
				}
				if parts == nil {
					break
				}
				joined, err := concat(parts, r.dim)
				if err != nil {
					fail("%v", err)
					break
				}
				for _, j := range idx {
					consumed[j] = true
				}
				joined.Name, joined.Rule = r.dst[0].expand(caps), where
				out = append(out, joined)
			default:
				made, err := r.mapTensor(t, caps, env)
				if err != nil {
					fail("%v", err)
					break
				}
				for k := range made {
					made[k].Rule = where
				}
				out = append(out, made...)
			}
			break
		}
		if !mapped {
			t.Name = name
			out = append(out, t)
		}
	}
	return out
}

// expandPattern fills a pattern's captures, for concat's other sources.
func expandPattern(p pattern, caps map[string]string) string {
	return template{text: p.text, segs: p.segs}.expand(caps)
}

func (r *rule) rewrite(name string) string {
	switch r.kind {
	case opStripPrefix:
		return strings.TrimPrefix(name, r.literal)
	case opRemoveSegment:
		if !strings.Contains(name, r.literal) {
			return name
		}
		parts := strings.Split(name, ".")
		kept := parts[:0]
		for _, p := range parts {
			if p != r.literal {
				kept = append(kept, p)
			}
		}
		return strings.Join(kept, ".")
	case opRegex:
		return r.re.ReplaceAllString(name, r.repl)
	}
	return name
}

// mapsAny reports whether the adapter changes any of the names (after the
// chain before): a rewrite that changes one, or a rename, unstack, split,
// concat or permute that matches one (drop and ignore rules alone do not
// make a scheme: HF checkpoints carry rotary buffers too). Mappings are
// tried only on names whose first segment one of them starts with, so an
// adapter for another scheme costs a lookup per name.
func (a *Adapter) mapsAny(tensors []safetensors.TensorInfo, before Chain) bool {
	firsts := map[string]bool{}
	anyFirst := false
	var mappings []*rule
	for _, r := range a.rules {
		switch {
		case r.kind.rewrite():
			mappings = append(mappings, r)
		case r.kind != opDrop && r.kind != opIgnore:
			mappings = append(mappings, r)
			anyFirst = anyFirst || r.src[0].first == ""
			firsts[r.src[0].first] = true
		}
	}
	caps := map[string]string{}
	for _, t := range tensors {
		name := t.Name
		for _, b := range before {
			name = b.rewriteOnly(name)
		}
		var segs []string
		for _, r := range mappings {
			if r.kind.rewrite() {
				if n := r.rewrite(name); n != name {
					return true
				}
				continue
			}
			if first, _, _ := strings.Cut(name, "."); !anyFirst && !firsts[first] {
				break
			}
			if r.src[0].rejects(name) {
				continue
			}
			if segs == nil {
				segs = strings.Split(name, ".")
			}
			if r.src[0].match(name, segs, caps) {
				return true
			}
		}
	}
	return false
}

// rewriteOnly applies the adapter's rewrites to a name.
func (a *Adapter) rewriteOnly(name string) string {
	for _, r := range a.rules {
		if r.kind.rewrite() {
			name = r.rewrite(name)
		}
	}
	return name
}

// Layout rules make work from numbers in headers: these bound it, so that a
// hostile shape ([10^12, 0] holds no bytes) cannot make a rule loop or
// allocate without end.
const (
	maxSlices   = 1 << 16 // unstack: experts a tensor
	maxSegments = 1 << 22 // pieces of one logical tensor
)

// checkLayout rejects a tensor whose shape overflows or whose layout would
// need more than maxSegments pieces of rows.
func checkLayout(shape []uint64, pieces uint64) error {
	if _, ok := (safetensors.TensorInfo{Shape: shape}).NumElements(); !ok {
		return fmt.Errorf("shape %s overflows", safetensors.FormatShape(shape))
	}
	if pieces > maxSegments {
		return fmt.Errorf("shape %s would need %d pieces, more than %d", safetensors.FormatShape(shape), pieces, maxSegments)
	}
	return nil
}

// mapTensor applies a rename, unstack, split or permute rule to t.
func (r *rule) mapTensor(t Tensor, caps map[string]string, env Env) ([]Tensor, error) {
	elem := uint64(t.DType.Bits() / 8)
	if t.DType.Bits()%8 != 0 && r.kind != opRename {
		return nil, fmt.Errorf("%s elements are smaller than a byte; only renames apply", t.DType)
	}
	if r.kind != opRename {
		if err := checkLayout(t.Shape, 0); err != nil {
			return nil, err
		}
	}
	switch r.kind {
	case opRename:
		t.Name = r.dst[0].expand(caps)
		return []Tensor{t}, nil
	case opUnstack:
		if len(t.Shape) < 2 {
			return nil, fmt.Errorf("shape %s has no dimension to unstack", safetensors.FormatShape(t.Shape))
		}
		if t.Shape[0] > maxSlices {
			return nil, fmt.Errorf("%d slices to unstack, more than %d", t.Shape[0], maxSlices)
		}
		inner := t.Shape[1:]
		slice := elem * product(inner)
		var out []Tensor
		for e := range t.Shape[0] {
			piece := Tensor{DType: t.DType, Shape: inner, Segments: sliceSegments(t.Segments, e*slice, slice),
				Source: fmt.Sprintf("%s[%d]", t.Source, e)}
			caps["{e}"] = strconv.FormatUint(e, 10)
			if len(r.dst) == 1 {
				piece.Name = r.dst[0].expand(caps)
				out = append(out, piece)
				continue
			}
			parts, err := r.split(piece, caps, env, 0)
			if err != nil {
				return nil, err
			}
			out = append(out, parts...)
		}
		return out, nil
	case opSplit:
		return r.split(t, caps, env, r.dim)
	case opPermute:
		heads, err := r.heads.eval(env, false)
		if err != nil {
			return nil, err
		}
		if len(t.Shape) < 1 || heads <= 0 || t.Shape[0]%uint64(2*heads) != 0 {
			return nil, fmt.Errorf("%s rows are not a multiple of 2 x heads (%d)", safetensors.FormatShape(t.Shape), heads)
		}
		rows, h := t.Shape[0], uint64(heads)
		half := rows / h / 2
		row := elem * product(t.Shape[1:])
		if row == 0 { // no bytes to reorder
			t.Name = r.dst[0].expand(caps)
			return []Tensor{t}, nil
		}
		if err := checkLayout(t.Shape, rows); err != nil {
			return nil, err
		}
		segs := make([]Segment, 0, rows)
		// HF row (h, b, a) is native row (h, a, b) of the [heads, half, 2] view.
		for hh := range h {
			for b := range uint64(2) {
				for a := range half {
					segs = appendSegments(segs, sliceSegments(t.Segments, (hh*2*half+2*a+b)*row, row))
				}
			}
		}
		t.Segments, t.Name = segs, r.dst[0].expand(caps)
		return []Tensor{t}, nil
	}
	return nil, fmt.Errorf("not a mapping")
}

// split cuts t along dim into len(r.dst) parts: the dimension holds
// `groups` repeats of blocks of r.sizes (equal parts by default).
func (r *rule) split(t Tensor, caps map[string]string, env Env, dim int) ([]Tensor, error) {
	if dim >= len(t.Shape) {
		return nil, fmt.Errorf("shape %s has no dimension %d", safetensors.FormatShape(t.Shape), dim)
	}
	groups := int64(1)
	if r.groups != nil {
		var err error
		if groups, err = r.groups.eval(env, false); err != nil {
			return nil, err
		}
	}
	n := t.Shape[dim]
	if groups <= 0 || n%uint64(groups) != 0 {
		return nil, fmt.Errorf("dimension %d (%d) is not %d groups", dim, n, groups)
	}
	block := n / uint64(groups)
	sizes := make([]uint64, len(r.dst))
	var total uint64
	for i := range sizes {
		if r.sizes == nil {
			if block%uint64(len(r.dst)) != 0 {
				return nil, fmt.Errorf("dimension %d (%d) does not split into %d equal parts", dim, n, len(r.dst))
			}
			sizes[i] = block / uint64(len(r.dst))
		} else {
			v, err := r.sizes[i].eval(env, false)
			if err != nil {
				return nil, err
			}
			if v <= 0 {
				return nil, fmt.Errorf("size %s is %d", r.sizes[i].text, v)
			}
			sizes[i] = uint64(v)
		}
		total += sizes[i]
	}
	if total != block {
		return nil, fmt.Errorf("dimension %d is %d, but %d groups of sizes summing to %d make %d", dim, n, groups, total, total*uint64(groups))
	}
	elem := uint64(t.DType.Bits() / 8)
	outer := product(t.Shape[:dim])
	inner := elem * product(t.Shape[dim+1:])
	if inner == 0 || n == 0 {
		outer = 0 // no bytes: every part is empty
	}
	if err := checkLayout(t.Shape, outer*uint64(groups)); err != nil {
		return nil, err
	}
	out := make([]Tensor, len(r.dst))
	var offset uint64
	for i, size := range sizes {
		var segs []Segment
		for o := range outer {
			for g := range uint64(groups) {
				start := (o*n + g*block + offset) * inner
				segs = appendSegments(segs, sliceSegments(t.Segments, start, size*inner))
			}
		}
		shape := append([]uint64(nil), t.Shape...)
		shape[dim] = size * uint64(groups)
		out[i] = Tensor{Name: r.dst[i].expand(caps), DType: t.DType, Shape: shape, Segments: segs,
			Source: fmt.Sprintf("%s[%s]", t.Source, describeCut(dim, len(t.Shape), groups, offset, size, block))}
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

// concat joins tensors along dim; all other dimensions must agree.
func concat(parts []Tensor, dim int) (Tensor, error) {
	first := parts[0]
	if dim >= len(first.Shape) {
		return Tensor{}, fmt.Errorf("shape %s has no dimension %d", safetensors.FormatShape(first.Shape), dim)
	}
	shape := append([]uint64(nil), first.Shape...)
	shape[dim] = 0
	sources := make([]string, len(parts))
	for i, p := range parts {
		if p.DType != first.DType || len(p.Shape) != len(first.Shape) {
			return Tensor{}, fmt.Errorf("cannot join %s %s with %s %s", first.DType, safetensors.FormatShape(first.Shape), p.DType, safetensors.FormatShape(p.Shape))
		}
		for d := range p.Shape {
			if d != dim && p.Shape[d] != first.Shape[d] {
				return Tensor{}, fmt.Errorf("cannot join %s with %s along dimension %d", safetensors.FormatShape(first.Shape), safetensors.FormatShape(p.Shape), dim)
			}
		}
		shape[dim] += p.Shape[dim]
		sources[i] = p.Source
	}
	elem := uint64(first.DType.Bits() / 8)
	inner := elem * product(first.Shape[dim+1:])
	outer := product(first.Shape[:dim])
	if inner == 0 {
		outer = 0
	}
	if err := checkLayout(shape, outer*uint64(len(parts))); err != nil {
		return Tensor{}, err
	}
	var segs []Segment
	for o := range outer {
		for _, p := range parts {
			n := p.Shape[dim] * inner
			segs = appendSegments(segs, sliceSegments(p.Segments, o*n, n))
		}
	}
	return Tensor{DType: first.DType, Shape: shape, Segments: segs, Source: strings.Join(sources, "+")}, nil
}

func product(dims []uint64) uint64 {
	n := uint64(1)
	for _, d := range dims {
		n *= d
	}
	return n
}

// sliceSegments returns the segments holding bytes [off, off+n) of the
// tensor that segs make up.
func sliceSegments(segs []Segment, off, n uint64) []Segment {
	var out []Segment
	var base uint64
	for _, s := range segs {
		if n == 0 {
			break
		}
		if off >= base+s.Length {
			base += s.Length
			continue
		}
		within := off - base
		take := min(n, s.Length-within)
		out = append(out, Segment{Source: s.Source, Offset: s.Offset + within, Length: take})
		off, n, base = off+take, n-take, base+s.Length
	}
	return out
}

// appendSegments appends more to segs, merging pieces that continue each
// other in the same physical tensor.
func appendSegments(segs, more []Segment) []Segment {
	for _, m := range more {
		if k := len(segs) - 1; k >= 0 && segs[k].Source == m.Source && segs[k].Offset+segs[k].Length == m.Offset {
			segs[k].Length += m.Length
			continue
		}
		segs = append(segs, m)
	}
	return segs
}
