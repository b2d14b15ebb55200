package adapter

import (
	"slices"

	"github.com/ckptcheck/ckptcheck/safetensors"
)

// Routing: which rule of a stage maps a tensor, by its name and dtype.

// route follows a name through the rules: rewrites in order, up to the
// first mapping that matches.
func (a stage) route(name string, dtype safetensors.DType, scratch map[string]string) route {
	return a.routeFrom(0, name, dtype, scratch)
}

// routeFrom is route from rule k on, name as the rules before k left it.
func (a stage) routeFrom(k int, name string, dtype safetensors.DType, scratch map[string]string) route {
	var segs []string
	for ; k < len(a.rules); k++ {
		r := a.rules[k]
		if r.kind.rewrite() {
			if n := r.rewrite(name); n != name {
				name, segs = n, nil
			}
			continue
		}
		if r.dtypes != nil && r.kind != opConcat && !slices.Contains(r.dtypes, dtype) {
			continue // a concat's sources are kept or sent on together (unjoin)
		}
		if m := r.matchSource(name, &segs, scratch); m >= 0 {
			return route{rule: k, slot: m, name: name, segs: segs}
		}
	}
	return route{rule: -1, name: name}
}

// unjoin sends the sources of a concat with dtypes= on to the rules after
// it unless every one of them is of those dtypes: a join maps all its
// sources or none. Sources it cannot find stay, for the join to report.
func (a stage) unjoin(in []Tensor, routes []route, caps map[string]string) {
	index := map[int]map[string]int{} // concat rule → name routed to it → tensor
	for i, rt := range routes {
		if rt.rule >= 0 && a.rules[rt.rule].kind == opConcat && a.rules[rt.rule].dtypes != nil {
			if index[rt.rule] == nil {
				index[rt.rule] = map[string]int{}
			}
			if _, dup := index[rt.rule][rt.name]; !dup {
				index[rt.rule][rt.name] = i
			}
		}
	}
	for i := range routes {
		rt := routes[i]
		if rt.rule < 0 || rt.slot != 0 || index[rt.rule] == nil {
			continue
		}
		r := a.rules[rt.rule]
		clear(caps)
		r.src[0].match(rt.name, rt.segs, caps)
		group := []int{i}
		for _, p := range r.src[1:] {
			if j, ok := index[rt.rule][p.expand(caps)]; ok {
				group = append(group, j)
			}
		}
		if !slices.ContainsFunc(group, func(j int) bool { return !slices.Contains(r.dtypes, in[j].DType) }) {
			continue
		}
		for _, j := range group {
			routes[j] = a.routeFrom(rt.rule+1, routes[j].name, in[j].DType, caps)
		}
	}
}
