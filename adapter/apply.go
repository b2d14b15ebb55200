package adapter

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/ckptcheck/ckptcheck/safetensors"
)

// Layout rules make work from numbers in headers. These bound it, so that
// a hostile shape ([10^12, 0] holds no bytes) cannot make a rule loop or
// allocate without end, and the work of a view grows with the number of
// physical tensors, never with a number written in their shapes.
const (
	maxSlices   = 1 << 16 // unstack: slices of one tensor
	maxSegments = 1 << 22 // pieces of one logical tensor
	// Each adapter of a chain may do work up to workBase units plus
	// workPerTensor per physical tensor: a segment is a unit and a logical
	// tensor tensorUnits (its names and its place in the view weigh more
	// than a segment), so a zero-byte slice costs like any other.
	workBase      = 1 << 18
	workPerTensor = 1 << 12
	tensorUnits   = 8
)

// testHookApply, when set by a test, sees every chain ApplyLimit applies.
var testHookApply func(Chain)

// Apply maps physical tensors through the chain to the logical view. env
// gives rule expressions their config values. The work is bounded as
// ApplyLimit says, with no limit of its own on the tensors.
func (c Chain) Apply(tensors []safetensors.TensorInfo, env Env) *View {
	return c.ApplyLimit(tensors, env, 0)
}

// ApplyLimit is Apply making at most maxTensors logical tensors (0: no
// limit of the caller's). Whatever the limit, each adapter of the chain may
// make logical tensors and segments only up to a bound proportional to
// len(tensors) plus a constant (a logical tensor counts as several
// segments, whether or not it holds bytes). An adapter stops
// where it would pass either bound, before doing the work: the view holds
// the tensors made until then, Truncated is set, and a RuleError names the
// tensor where it stopped.
func (c Chain) ApplyLimit(tensors []safetensors.TensorInfo, env Env, maxTensors int) *View {
	if testHookApply != nil {
		testHookApply(c)
	}
	v := &View{Adapter: c.Name()}
	b := newBudget(maxTensors, len(tensors))
	n := len(tensors)
	if maxTensors > 0 && n > maxTensors {
		b.hitTensors = true
		v.stop(tensors[maxTensors].Name, c.Name(), b, n-maxTensors-1)
		n = maxTensors
	}
	cur := make([]Tensor, n)
	segments := make([]Segment, n) // one backing array: most tensors are one segment
	for i, t := range tensors[:n] {
		segments[i] = Segment{Source: i, Length: t.Size()}
		cur[i] = Tensor{Name: t.Name, DType: t.DType, Shape: t.Shape, Source: t.Name, Segments: segments[i : i+1 : i+1]}
	}
	for _, a := range c {
		for _, st := range a.stages() {
			b.reset()
			cur = st.apply(cur, env, v, b)
		}
	}
	v.Absent = c.absent(env)
	// The view keeps the first tensor of each name, in place.
	v.Tensors = cur[:0]
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

// stop records that the chain stopped at the tensor named source, with
// left more tensors after it unmapped.
func (v *View) stop(source, rule string, b *budget, left int) {
	var msg string
	if b.hitTensors {
		msg = fmt.Sprintf("the view would hold more than %d logical tensors, its limit", b.maxTensors)
	} else {
		msg = fmt.Sprintf("the view would take more than %d units of work (a segment 1, a tensor %d), the bound for %d physical tensors",
			b.maxWork, tensorUnits, b.physical)
	}
	v.Truncated = true
	v.Errors = append(v.Errors, RuleError{Name: source, Rule: rule,
		Message: fmt.Sprintf("%s; stopped here: this tensor and the %d after it are left out", msg, left)})
}

// errLimit is a mapping that would pass the budget.
var errLimit = errors.New("over the work bound")

// A budget bounds what one adapter makes: logical tensors (the caller's
// limit) and work, in units of segments (the work bound). A mapping reserves its
// work before doing it; what it made is then committed.
type budget struct {
	maxTensors, maxWork uint64 // maxTensors 0: no limit
	physical            int
	tensors, work       uint64 // committed
	pendTensors         uint64 // reserved by the mapping under way
	pendWork            uint64
	hitTensors          bool // the tensor limit, not the work bound, stopped it
}

func newBudget(maxTensors, physical int) *budget {
	return &budget{maxTensors: uint64(max(maxTensors, 0)), maxWork: workBase + workPerTensor*uint64(physical), physical: physical}
}

func (b *budget) reset() {
	*b = budget{maxTensors: b.maxTensors, maxWork: b.maxWork, physical: b.physical}
}

// reserve makes room for tensors more tensors of pieces segments in all,
// or reports that there is none.
func (b *budget) reserve(tensors, pieces uint64) bool {
	t, w := b.tensors+b.pendTensors, b.work+b.pendWork // never past the bounds
	if b.maxTensors > 0 && tensors > b.maxTensors-t {
		b.hitTensors = true
		return false
	}
	if tensors > (b.maxWork-w)/tensorUnits || pieces > b.maxWork-w-tensors*tensorUnits {
		return false
	}
	b.pendTensors += tensors
	b.pendWork += tensors*tensorUnits + pieces
	return true
}

// commit counts the tensors a mapping made, ending its reservation; it
// returns how many of them fit.
func (b *budget) commit(made []Tensor) int {
	for i := range made {
		if !b.take(&made[i]) {
			return i
		}
	}
	return len(made)
}

// take counts one tensor made, ending any reservation, or reports that it
// does not fit.
func (b *budget) take(t *Tensor) bool {
	b.pendTensors, b.pendWork = 0, 0
	if !b.reserve(1, uint64(len(t.Segments))) {
		return false
	}
	b.tensors, b.work = b.tensors+b.pendTensors, b.work+b.pendWork
	b.pendTensors, b.pendWork = 0, 0
	return true
}

// A route is where a tensor goes in one adapter: the first mapping that
// matches it (-1: none) and the name it has there.
type route struct {
	rule int
	slot int      // which of the rule's sources matched (concat)
	name string   // as the rewrites before the rule left it
	segs []string // name split at dots, when a segment pattern matched
}

// A stage is the rules of an adapter between two "then" lines: each runs
// over what the stage before made, as the adapters of a chain do.
type stage struct {
	adapter string
	rules   []*rule
}

// stages splits the adapter's rules at its "then" lines.
func (a *Adapter) stages() []stage {
	var out []stage
	for i, r := range a.rules {
		if i == 0 || r.stage != a.rules[i-1].stage {
			out = append(out, stage{adapter: a.Name})
		}
		out[len(out)-1].rules = append(out[len(out)-1].rules, r)
	}
	return out
}

// matchSource returns the index of the rule's first source pattern that
// matches name, or -1. *segs is name split at dots, made on first need and
// kept for the caller's next rule (nil until then).
func (r *rule) matchSource(name string, segs *[]string, caps map[string]string) int {
	for m := range r.src {
		p := &r.src[m]
		if p.rejects(name) {
			continue
		}
		if *segs == nil && p.glob == nil {
			*segs = strings.Split(name, ".")
		}
		if p.match(name, *segs, caps) {
			return m
		}
	}
	return -1
}

// apply runs one adapter over the tensors. Every tensor is routed first,
// so that concat finds its sources by the names the rewrites give them,
// wherever they are in the file; then each is mapped, in file order.
func (a stage) apply(in []Tensor, env Env, v *View, b *budget) []Tensor {
	if len(a.rules) == 0 {
		return in
	}
	caps := map[string]string{}
	routes := make([]route, len(in))
	var joins map[int]map[string]int // concat rule → name → first tensor routed to it
	for i := range in {
		routes[i] = a.route(in[i].Name, in[i].DType, caps)
	}
	a.unjoin(in, routes, caps)
	for i, rt := range routes {
		if rt.rule >= 0 && a.rules[rt.rule].kind == opConcat {
			if joins == nil {
				joins = make(map[int]map[string]int)
			}
			if joins[rt.rule] == nil {
				joins[rt.rule] = make(map[string]int)
			}
			if _, dup := joins[rt.rule][rt.name]; !dup {
				joins[rt.rule][rt.name] = i
			}
		}
	}
	var consumed []bool
	if joins != nil {
		consumed = make([]bool, len(in))
	}
	out := make([]Tensor, 0, len(in))
	for i, t := range in {
		if consumed != nil && consumed[i] {
			continue
		}
		rt := routes[i]
		t.Name = rt.name
		if rt.rule < 0 {
			if !b.take(&t) {
				v.stop(t.Source, a.adapter, b, len(in)-i-1)
				return out
			}
			out = append(out, t)
			continue
		}
		r := a.rules[rt.rule]
		fail := func(name, format string, args ...any) {
			v.Errors = append(v.Errors, RuleError{Name: name, Rule: r.where, Message: fmt.Sprintf(format, args...)})
		}
		clear(caps)
		r.src[rt.slot].match(rt.name, rt.segs, caps)
		n0 := len(out)
		var err error
		switch r.kind {
		case opIgnore:
			v.Ignored = append(v.Ignored, t.Source)
			continue
		case opDrop:
			v.Dropped = append(v.Dropped, Dropped{Name: t.Source, Reason: r.reason, Rule: r.where})
			continue
		case opConcat:
			var parts []Tensor
			if parts, err = a.joinParts(r, rt, i, in, routes, joins[rt.rule], consumed, caps); err != nil {
				fail(t.Source, "%v", err)
				continue
			}
			var joined Tensor
			var every int64 // 0: one after the other
			if r.every != nil {
				if every, err = r.every.eval(env, false); err == nil && every <= 0 {
					err = fmt.Errorf("every=%s is %d: want a positive number", r.every.text, every)
				}
			}
			if err == nil {
				joined, err = concat(parts, r.dim, every, b)
			}
			if err == nil {
				if joined.Name, err = r.dst[0].expandEnv(caps, env); err == nil {
					out = append(out, joined)
				}
			}
			if err != nil && err != errLimit {
				for _, p := range parts {
					fail(p.Source, "%v", err)
				}
				continue
			}
		default:
			out, err = r.mapTensor(out, t, caps, env, b)
		}
		if err == errLimit {
			v.stop(t.Source, r.where, b, len(in)-i-1)
			return out[:n0]
		}
		if err != nil {
			fail(t.Source, "%v", err)
			out = out[:n0]
			continue
		}
		made := out[n0:]
		if slices.ContainsFunc(made, func(m Tensor) bool { return (m.Transposed || tiled(m)) && m.Add+r.add != 0 }) {
			fail(t.Source, "a shift (add=) on a tensor read transposed: its values are read tile by tile, not decoded")
			out = out[:n0]
			continue
		}
		for k := range made {
			made[k].Rule = r.where
			made[k].Add += r.add
		}
		if n := b.commit(made); n < len(made) {
			v.stop(t.Source, r.where, b, len(in)-i-1)
			return out[:n0+n]
		}
	}
	return out
}

// joinParts finds the sources of the concat that tensor i, matching
// source rt.slot, starts: in the order the rule lists them, each by the
// name the rewrites gave it, and marks them used. joins maps the names of
// the tensors routed to the rule to the first of them.
func (a stage) joinParts(r *rule, rt route, i int, in []Tensor, routes []route, joins map[string]int, consumed []bool, caps map[string]string) ([]Tensor, error) {
	idx := make([]int, len(r.src))
	for m := range r.src {
		if m == rt.slot {
			idx[m] = i
			continue
		}
		want := r.src[m].expand(caps)
		j, ok := joins[want]
		switch {
		case !ok:
			return nil, fmt.Errorf("no %s to join", want)
		case j == i || consumed[j]:
			return nil, fmt.Errorf("%s is joined already", want)
		}
		idx[m] = j
	}
	parts := make([]Tensor, len(idx))
	for m, j := range idx {
		consumed[j] = true
		parts[m] = in[j]
		parts[m].Name = routes[j].name
	}
	return parts, nil
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
		if r.reStart && !strings.HasPrefix(name, r.reLit) || !strings.Contains(name, r.reLit) || !r.re.MatchString(name) {
			// Most names: no match, and no copy made.
			return name
		}
		return r.re.ReplaceAllString(name, r.repl)
	}
	return name
}

// mapsAny reports whether the adapter changes any of the names (after the
// rewrites of the chain before): a rewrite that changes one, or a rename,
// unstack, split, concat or permute that matches one (drop and ignore rules
// alone do not make a scheme: HF checkpoints carry rotary buffers too).
// Mappings are tried only on names whose first segment one of them starts
// with, so an adapter for another scheme costs a lookup per name.
//
// A later stage sees the names the rewrites of the stages before it left
// (not what their mappings made): it maps a name when it would match one
// that reached it unmapped.
func (a *Adapter) mapsAny(tensors []safetensors.TensorInfo, before Chain) bool {
	if !slices.ContainsFunc(a.rules, func(r *rule) bool { return !r.kind.rewrite() }) {
		// Rewrites only (the wrappers): stream the names.
		for _, t := range tensors {
			name := t.Name
			for _, b := range before {
				name = b.rewriteOnly(name)
			}
			if a.rewriteOnly(name) != name {
				return true
			}
		}
		return false
	}
	return a.mapsAnyOf(namesAfter(tensors, before))
}

// A nameList is the tensors' names as the rewrites of a chain leave them,
// with their first segments and the sets of first and last segments,
// computed once for all the adapters auto tries: a pattern whose literal
// first or last segment no name has cannot match, and is not tried name by
// name.
type nameList struct {
	names, firsts []string
	firstSet      map[string]bool
	lastSet       map[string]bool
}

func namesAfter(tensors []safetensors.TensorInfo, before Chain) nameList {
	l := nameList{names: make([]string, len(tensors)), firsts: make([]string, len(tensors)),
		firstSet: map[string]bool{}, lastSet: map[string]bool{}}
	for i, t := range tensors {
		name := t.Name
		for _, b := range before {
			name = b.rewriteOnly(name)
		}
		l.names[i] = name
		l.firsts[i], _, _ = strings.Cut(name, ".")
		if !l.firstSet[l.firsts[i]] {
			l.firstSet[l.firsts[i]] = true
		}
		last := name[strings.LastIndexByte(name, '.')+1:]
		if !l.lastSet[last] {
			l.lastSet[last] = true
		}
	}
	return l
}

// possible reports whether a pattern could match one of the names: its
// literal first and last segments are those of some names.
func (p *pattern) possible(l nameList) bool {
	if p.glob != nil {
		return true
	}
	if p.first != "" && !l.firstSet[p.first] {
		return false
	}
	return p.last == "" || l.lastSet[p.last[1:]]
}

func (a *Adapter) mapsAnyOf(l nameList) bool {
	for i, st := range a.stages() {
		if i > 0 {
			// A later stage sees the names the earlier stages' rewrites left.
			if prior := (&Adapter{Name: a.Name, rules: a.rules[:slices.Index(a.rules, st.rules[0])]}); prior.rewrites() {
				l = namesAfter(infosNamed(l.names), Chain{prior})
			}
		}
		if st.mapsAny(l) {
			return true
		}
	}
	return false
}

// rewrites reports whether the adapter has any rewrite rule.
func (a *Adapter) rewrites() bool {
	return slices.ContainsFunc(a.rules, func(r *rule) bool { return r.kind.rewrite() })
}

// infosNamed makes tensor infos that carry only names.
func infosNamed(names []string) []safetensors.TensorInfo {
	out := make([]safetensors.TensorInfo, len(names))
	for i, n := range names {
		out[i].Name = n
	}
	return out
}

func (a stage) mapsAny(l nameList) bool {
	firsts := map[string]bool{}
	anyFirst := false
	var rules []*rule
	for _, r := range a.rules {
		if r.kind == opDrop || r.kind == opIgnore {
			continue
		}
		if !r.kind.rewrite() && !slices.ContainsFunc(r.src, func(p pattern) bool { return p.possible(l) }) {
			continue // no name has all the literal segments of any of its patterns
		}
		rules = append(rules, r)
		for _, p := range r.src {
			anyFirst = anyFirst || p.first == ""
			firsts[p.first] = true
		}
	}
	if len(rules) == 0 {
		return false
	}
	caps := map[string]string{}
	for i, name := range l.names {
		known := anyFirst || firsts[l.firsts[i]] // the name never changes below: a change returns
		var segs []string
		for _, r := range rules {
			if r.kind.rewrite() {
				if r.rewrite(name) != name {
					return true
				}
				continue
			}
			if known && r.matchSource(name, &segs, caps) >= 0 {
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
