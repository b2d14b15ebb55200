package adapter

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// A target is one published template a candidate makes, with its rows in
// one group of a split (0: the whole tensor) and, when rotary rows are
// reordered, the heads of the permutation.
type target struct {
	pub   int
	rows  uint64
	heads uint64
}

// A candidate is one way an exported template can make published ones: a
// rename, a transpose, a split along dim 0 (in groups), or an unstack of
// a leading expert dimension (whose slices may be split too); each target
// possibly with its rotary rows permuted.
type candidate struct {
	exp     int
	kind    opKind // opRename, opTranspose, opSplit, opUnstack
	targets []target
	groups  uint64
	// expertDim is, for an unstack, the published index dimension the
	// slice number fills.
	expertDim int
	named     bool // the names agree too (see sameName)
	// transposed, for a split, says the exported tensor is the transpose
	// of the parts' concatenation (GPT-2's Conv1D c_attn [D, 3D], a JAX
	// kernel [in, out]): cut along dim 1, each part transposed.
	transposed bool
	// parts, for a concat, are the exported templates joined after exp,
	// in order; the candidate stands in each part's list too (exp is the
	// first part in all of them).
	parts  []int
	score  float64
	scored bool
}

// sameChoice says a and b are one concat seen from two of its parts.
func sameChoice(a, b *candidate) bool {
	return len(a.parts) > 0 && a.exp == b.exp && slices.Equal(a.parts, b.parts) && a.targets[0].pub == b.targets[0].pub && a.transposed == b.transposed
}

func (c *candidate) covers(pub int) bool {
	return slices.ContainsFunc(c.targets, func(t target) bool { return t.pub == pub })
}

// describe says what the candidate does, in the published names.
func (c *candidate) describe(pub []*nameTemplate) string {
	var parts []string
	for _, t := range c.targets {
		s := pub[t.pub].key
		if t.heads > 0 {
			s += fmt.Sprintf(" (rotary rows permuted, %d heads)", t.heads)
		}
		parts = append(parts, s)
	}
	switch c.kind {
	case opTranspose:
		return "transposed to " + parts[0]
	case opSplit:
		g := ""
		if c.groups > 1 {
			g = fmt.Sprintf(" in %d groups", c.groups)
		}
		if c.transposed {
			return "split along dim 1" + g + " and transposed into " + strings.Join(parts, " + ")
		}
		return "split" + g + " into " + strings.Join(parts, " + ")
	case opUnstack:
		if c.transposed {
			return "unstacked and transposed into " + strings.Join(parts, " + ")
		}
		return "unstacked into " + strings.Join(parts, " + ")
	case opConcat:
		s := "joined with the next " + strconv.Itoa(len(c.parts)) + " into " + parts[0]
		if c.transposed {
			s += ", transposed"
		}
		return s
	}
	return "renamed to " + parts[0]
}

// sameIndices reports whether two templates run over the same indices,
// dimension by dimension.
func sameIndices(a, b []indexSet) bool { return slices.Equal(a, b) }

// inferEnv is what inference reads from the config: the heads and the
// head dimension, for the rotary permutation and per-group QKV splits.
type inferEnv struct {
	heads, kvHeads, headDim uint64
}

func inferEnvOf(env Env) inferEnv {
	var e inferEnv
	e.heads, _ = env.Get("num_attention_heads")
	e.kvHeads, _ = env.Get("num_key_value_heads")
	if e.kvHeads == 0 {
		e.kvHeads = e.heads
	}
	e.headDim, _ = env.Get("head_dim")
	return e
}

// permuteHeads lists the heads a rotary permutation of a matrix of these
// rows could use: the attention heads or the key/value heads, when the
// rows are that many heads of head_dim, and the permutation moves rows.
func (e inferEnv) permuteHeads(shape []uint64) []uint64 {
	if len(shape) != 2 || e.headDim < 4 || e.headDim%2 != 0 {
		return nil
	}
	var out []uint64
	for _, h := range []uint64{e.heads, e.kvHeads} {
		if h > 0 && shape[0] == h*e.headDim && !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	return out
}

// withPermutes returns c and its variants with each target's rows
// permuted or not.
func (e inferEnv) withPermutes(c candidate, pub []*nameTemplate) []candidate {
	out := []candidate{c}
	for i, t := range c.targets {
		var next []candidate
		for _, h := range e.permuteHeads(pub[t.pub].shape) {
			for _, v := range out {
				v.targets = slices.Clone(v.targets)
				v.targets[i].heads = h
				next = append(next, v)
			}
		}
		out = append(out, next...)
	}
	return out
}

// candidatesFor lists the ways exported template x can make published
// templates. transposes says square matrices may be transposed too (the
// side stores some matrices transposed).
func (inf *Inference) candidatesFor(x int, transposes bool) []candidate {
	xt := inf.exp[x]
	if !xt.safe {
		return nil
	}
	var out []candidate
	add := func(c candidate) {
		c.exp = x
		c.named = c.kind == opRename && len(c.targets) == 1 && sameName(xt.key, inf.pub[c.targets[0].pub].key)
		// On a side that stores matrices transposed, a square one may be
		// too, whatever its name: values decide.
		c.named = c.named && !(transposes && square(xt.shape))
		if c.named {
			out = append(out, c) // the names agree: the layout is the published one
			return
		}
		out = append(out, inf.env.withPermutes(c, inf.pub)...)
	}
	// Templates that run over the same indices, by shape after dim 0.
	var split, tsplit []int
	for p, pt := range inf.pub {
		if !pt.safe {
			continue
		}
		if pt.count() == xt.count() && sameIndices(pt.dims, xt.dims) {
			switch {
			case slices.Equal(pt.shape, xt.shape):
				add(candidate{kind: opRename, targets: []target{{pub: p}}})
				if transposes && square(xt.shape) {
					out = append(out, candidate{exp: x, kind: opTranspose, targets: []target{{pub: p}}})
				}
			case swapped(pt.shape, xt.shape):
				out = append(out, candidate{exp: x, kind: opTranspose, targets: []target{{pub: p}}})
			case len(pt.shape) == len(xt.shape) && len(xt.shape) >= 1 && pt.shape[0] < xt.shape[0] && slices.Equal(pt.shape[1:], xt.shape[1:]):
				split = append(split, p)
			}
			if len(xt.shape) == 2 && len(pt.shape) == 2 && pt.shape[1] == xt.shape[0] && pt.shape[0] < xt.shape[1] {
				tsplit = append(tsplit, p)
			}
		}
	}
	for _, c := range inf.splits(xt.shape[0], split) {
		c.kind = opSplit
		add(c)
	}
	// The transpose of a concatenation: no rotary permutation on top (a
	// permutation cuts the rows a transpose swaps).
	if len(tsplit) > 0 {
		for _, c := range inf.splits(xt.shape[1], tsplit) {
			c.kind, c.transposed, c.exp = opSplit, true, x
			out = append(out, c)
		}
	}
	// An expert stack: one more index on the published side, running over
	// dim 0.
	if len(xt.shape) >= 2 {
		e := xt.shape[0]
		var slices1 []int
		var dimOf []int
		for p, pt := range inf.pub {
			if !pt.safe || len(pt.dims) != len(xt.dims)+1 || uint64(pt.count()) != uint64(xt.count())*e || len(pt.shape) != len(xt.shape)-1 {
				continue
			}
			for k := range pt.dims {
				rest := slices.Delete(slices.Clone(pt.dims), k, k+1)
				if pt.dims[k].dense(e) && sameIndices(rest, xt.dims) {
					slices1 = append(slices1, p)
					dimOf = append(dimOf, k)
					break
				}
			}
		}
		inner := xt.shape[1:]
		var parts []int
		for i, p := range slices1 {
			switch pt := inf.pub[p]; {
			case slices.Equal(pt.shape, inner):
				add(candidate{kind: opUnstack, targets: []target{{pub: p}}, groups: 1, expertDim: dimOf[i]})
				if transposes && square(inner) {
					out = append(out, candidate{exp: x, kind: opUnstack, targets: []target{{pub: p}}, groups: 1, expertDim: dimOf[i], transposed: true})
				}
			case swapped(pt.shape, inner):
				// Layers stacked by a JAX scan, kernels [in, out]: each
				// slice transposed.
				out = append(out, candidate{exp: x, kind: opUnstack, targets: []target{{pub: p}}, groups: 1, expertDim: dimOf[i], transposed: true})
			case pt.shape[0] < inner[0] && slices.Equal(pt.shape[1:], inner[1:]):
				parts = append(parts, i)
			}
		}
		var ps []int
		for _, i := range parts {
			ps = append(ps, slices1[i])
		}
		for _, c := range inf.splits(inner[0], ps) {
			k := dimOf[slices.Index(slices1, c.targets[0].pub)]
			if !slices.ContainsFunc(c.targets, func(t target) bool { return dimOf[slices.Index(slices1, t.pub)] != k }) && c.groups == 1 {
				c.kind, c.expertDim = opUnstack, k
				add(c)
			}
		}
	}
	return out
}

// splits lists the ordered sets of two or three of the published
// templates pubs whose rows make rows: whole, or in per-group blocks of the
// config's key/value heads (a fused QKV).
func (inf *Inference) splits(rows uint64, pubs []int) []candidate {
	var out []candidate
	try := func(order []int) {
		var sum uint64
		for _, p := range order {
			sum += inf.pub[p].shape[0]
		}
		if sum != rows {
			return
		}
		gs := []uint64{1}
		if len(order) == 3 && inf.env.kvHeads > 1 {
			gs = append(gs, inf.env.kvHeads)
		}
		for _, g := range gs {
			ok := true
			ts := make([]target, len(order))
			for i, p := range order {
				r := inf.pub[p].shape[0]
				ok = ok && r%g == 0
				ts[i] = target{pub: p, rows: r / g}
			}
			if ok {
				out = append(out, candidate{targets: ts, groups: g})
			}
		}
	}
	n := len(pubs)
	for a := range n {
		for b := range n {
			if b == a {
				continue
			}
			try([]int{pubs[a], pubs[b]})
			for c := range n {
				if c != a && c != b {
					try([]int{pubs[a], pubs[b], pubs[c]})
				}
			}
		}
	}
	return out
}

// swapped reports shapes that differ only by their last two dimensions
// swapped.
func swapped(a, b []uint64) bool {
	n := len(a)
	return n >= 2 && len(b) == n && !slices.Equal(a, b) && slices.Equal(a[:n-2], b[:n-2]) && a[n-2] == b[n-1] && a[n-1] == b[n-2]
}

// square reports a matrix (or stack of them) whose last two dimensions agree.
func square(s []uint64) bool { return len(s) >= 2 && s[len(s)-1] == s[len(s)-2] }

// kindWord is the rule the candidate would be written as.
func (c *candidate) kindWord() string {
	switch c.kind {
	case opTranspose:
		return "transpose"
	case opSplit:
		return "split"
	case opUnstack:
		return "unstack"
	case opConcat:
		return "concat"
	}
	return "rename"
}

// maxConcatSiblings bounds the templates under one parent that a concat
// may join: q, k and v are a few; a hostile header's thousands of
// shape-alike siblings get no concat candidates (their cost would grow as
// their cube).
const maxConcatSiblings = 16

// parentOf is a template's module path without its last two segments
// ("layers.{}.attn" of "layers.{}.attn.wq.weight"), and the last one.
func parentOf(t *nameTemplate) (string, string) {
	n := len(t.segs)
	if n < 3 {
		return "", ""
	}
	return strings.Join(t.segs[:n-2], ".") + fmt.Sprint(t.at), t.segs[n-1]
}

// concats lists the ways exported templates under one parent, x first,
// join along dim 0 into a published template of their instances and
// indices: a published fused QKV or gate_up (Phi-3's qkv_proj) of an
// export that keeps them apart, or, transposed, GPT-2's Conv1D c_attn
// [D, 3D] of separate [D, D] Linears; vectors (their biases) too.
func (inf *Inference) concats(x int, siblings []int, limit int) []candidate {
	xt := inf.exp[x]
	if len(xt.shape) > 2 || len(xt.shape) == 0 {
		return nil
	}
	var out []candidate
	for p, pt := range inf.pub {
		if !pt.safe || pt.count() != xt.count() || !sameIndices(pt.dims, xt.dims) || len(pt.shape) != len(xt.shape) {
			continue
		}
		for _, transposed := range []bool{false, true} {
			if transposed && len(pt.shape) != 2 {
				continue
			}
			rows, rest := pt.shape[0], pt.shape[1:]
			if transposed {
				rows, rest = pt.shape[1], pt.shape[:1]
			}
			fits := func(y int) bool {
				yt := inf.exp[y]
				return yt.safe && yt.count() == xt.count() && sameIndices(yt.dims, xt.dims) && len(yt.shape) == len(pt.shape) && slices.Equal(yt.shape[1:], rest) && yt.shape[0] < rows
			}
			if !fits(x) {
				continue
			}
			try := func(parts []int) {
				sum := xt.shape[0]
				for _, y := range parts {
					sum += inf.exp[y].shape[0]
				}
				if sum == rows && len(out) <= limit {
					out = append(out, candidate{exp: x, kind: opConcat, targets: []target{{pub: p}}, parts: slices.Clone(parts), transposed: transposed})
				}
			}
			for _, y := range siblings {
				if y == x || !fits(y) {
					continue
				}
				try([]int{y})
				for _, z := range siblings {
					if z != x && z != y && fits(z) {
						try([]int{y, z})
					}
				}
			}
		}
	}
	return out
}

// addConcats adds to each exported template the concats it leads and
// those it is a part of, until the candidates of all templates pass
// limit (then it says false).
func (inf *Inference) addConcats(limit int) bool {
	total := 0
	for _, cs := range inf.cands {
		total += len(cs)
	}
	siblings := map[[2]string][]int{}
	for x, xt := range inf.exp {
		if parent, last := parentOf(xt); parent != "" && xt.safe {
			k := [2]string{parent, last}
			siblings[k] = append(siblings[k], x)
		}
	}
	for x, xt := range inf.exp {
		parent, last := parentOf(xt)
		sib := siblings[[2]string{parent, last}]
		if parent == "" || len(sib) < 2 || len(sib) > maxConcatSiblings {
			continue
		}
		for _, c := range inf.concats(x, sib, limit-total) {
			inf.cands[x] = append(inf.cands[x], c)
			for _, y := range c.parts {
				inf.cands[y] = append(inf.cands[y], c)
			}
			if total += 1 + len(c.parts); total > limit {
				return false
			}
		}
	}
	return true
}

// concatMembers lists a concat's exported templates, in order.
func (c *candidate) concatMembers() []int { return append([]int{c.exp}, c.parts...) }

// keepConcatsWhole unmaps the parts of a concat that not every part
// chose: a concat maps all its parts or none.
func (inf *Inference) keepConcatsWhole() {
	for x, k := range inf.chosen {
		if k < 0 || len(inf.cands[x][k].parts) == 0 {
			continue
		}
		c := &inf.cands[x][k]
		whole := true
		for _, y := range c.concatMembers() {
			ky := inf.chosen[y]
			whole = whole && ky >= 0 && sameChoice(&inf.cands[y][ky], c)
		}
		if whole {
			continue
		}
		for _, y := range c.concatMembers() {
			if ky := inf.chosen[y]; ky >= 0 && sameChoice(&inf.cands[y][ky], c) {
				inf.chosen[y] = -1
				inf.why[y] = "a concatenation not every part fits: " + c.describe(inf.pub)
			}
		}
	}
}
