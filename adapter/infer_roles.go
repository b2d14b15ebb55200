package adapter

import (
	"fmt"
	"slices"
	"strings"
	"sync"
)

// A role is what a projection is in a transformer block, as names say it
// across frameworks: wk, k_proj and key are all the attention's key.
// Values can tell two tensors of one shape apart but not which is which by
// intent: an export that swapped k and v in every layer is, to values, a
// consistent layout. Names are the intent, so a mapping they contradict is
// reported, not taken.
type role string

const (
	roleQ, roleK, roleV, roleO   role = "q", "k", "v", "o"
	roleGate, roleUp, roleDown   role = "gate", "up", "down"
	roleNone                     role = ""
	agreeNo, agreeUnknown, agree      = -1, 0, 1
)

// roleOfSegment names the role of one name segment (whole segments only:
// k_norm is not k).
var roleOfSegment = sync.OnceValue(func() map[string]role {
	return map[string]role{
		"q_proj": roleQ, "wq": roleQ, "q": roleQ, "query": roleQ, "q_lin": roleQ,
		"k_proj": roleK, "wk": roleK, "k": roleK, "key": roleK, "k_lin": roleK,
		"v_proj": roleV, "wv": roleV, "v": roleV, "value": roleV, "v_lin": roleV,
		"o_proj": roleO, "out_proj": roleO, "out_lin": roleO,
		"gate_proj": roleGate, "w1": roleGate, "w1_EFD": roleGate, "wi_0": roleGate,
		"up_proj": roleUp, "w3": roleUp, "w3_EFD": roleUp, "wi_1": roleUp,
		"down_proj": roleDown, "w2": roleDown, "w2_EDF": roleDown,
	}
})

// fusedRoles names the parts, in order, of a fused projection's segment:
// the order every framework we know concatenates them in.
var fusedRoles = sync.OnceValue(func() map[string][]role {
	return map[string][]role{
		"qkv_proj": {roleQ, roleK, roleV}, "wqkv": {roleQ, roleK, roleV}, "Wqkv": {roleQ, roleK, roleV},
		"qkv": {roleQ, roleK, roleV}, "c_attn": {roleQ, roleK, roleV}, "query_key_value": {roleQ, roleK, roleV},
		"linear_qkv":   {roleQ, roleK, roleV},
		"gate_up_proj": {roleGate, roleUp}, "gate_up": {roleGate, roleUp}, "w13": {roleGate, roleUp},
		"w13_EFD": {roleGate, roleUp}, "linear_fc1": {roleGate, roleUp},
	}
})

// rolesOf reads a template's role, or its fused roles, from the last
// segment that names one.
func rolesOf(t *nameTemplate) (single role, fused []role) {
	for i := len(t.segs) - 1; i >= 0; i-- {
		if r, ok := roleOfSegment()[t.segs[i]]; ok {
			return r, nil
		}
		if f, ok := fusedRoles()[t.segs[i]]; ok {
			return roleNone, f
		}
	}
	return roleNone, nil
}

// roleAgreement says whether candidate c makes the published tensors its
// name says: agree, agreeNo (k made v_proj; a wqkv split q, v, k), or
// agreeUnknown when either side's names say nothing.
func (inf *Inference) roleAgreement(c *candidate) (int, string) {
	if c.kind == opConcat {
		_, want := rolesOf(inf.pub[c.targets[0].pub])
		var got []role
		for _, y := range c.concatMembers() {
			r, _ := rolesOf(inf.exp[y])
			got = append(got, r)
		}
		if len(want) != len(got) || slices.Contains(got, roleNone) {
			return agreeUnknown, ""
		}
		return agreeOf(slices.Equal(got, want)), fmt.Sprintf("its names say the parts are %s, and %s joins %s (reordered in %s?)",
			rolesText(got), inf.pub[c.targets[0].pub].key, rolesText(want), inf.opt.mappedCheckpoint())
	}
	single, fused := rolesOf(inf.exp[c.exp])
	var got []role
	for _, t := range c.targets {
		r, _ := rolesOf(inf.pub[t.pub])
		if r == roleNone {
			return agreeUnknown, ""
		}
		got = append(got, r)
	}
	switch {
	case len(got) == 1 && single != roleNone:
		return agreeOf(got[0] == single), fmt.Sprintf("its name says %s, not %s (swapped in %s?)", single, got[0], inf.opt.mappedCheckpoint())
	case len(got) > 1 && len(fused) == len(got):
		return agreeOf(slices.Equal(got, fused)), fmt.Sprintf("its name says the parts are %s, not %s (reordered in %s?)", rolesText(fused), rolesText(got), inf.opt.mappedCheckpoint())
	}
	return agreeUnknown, ""
}

func rolesText(rs []role) string {
	var s []string
	for _, r := range rs {
		s = append(s, string(r))
	}
	return strings.Join(s, ", ")
}

func agreeOf(ok bool) int {
	if ok {
		return agree
	}
	return agreeNo
}

// siblingAgreement says whether c lays its tensor out as the chosen
// mappings of its siblings do: a bias splits in the groups its weight
// does, and a square matrix is transposed when every other matrix of its
// layer is (and not when none is).
func (inf *Inference) siblingAgreement(c *candidate) (int, string) {
	xt := inf.exp[c.exp]
	if n := len(xt.segs); n > 0 && xt.segs[n-1] == "bias" && len(c.targets) > 1 {
		w := slices.Clone(xt.segs)
		w[n-1] = "weight"
		for y, yt := range inf.exp {
			k := inf.chosen[y]
			if k < 0 || !slices.Equal(yt.segs, w) || !sameIndices(yt.dims, xt.dims) {
				continue
			}
			wc := &inf.cands[y][k]
			if wc.groups != c.groups || len(wc.targets) != len(c.targets) {
				return agreeNo, fmt.Sprintf("its weight %s splits %s", yt.key, groupsText(wc.groups))
			}
			return agree, ""
		}
		return agreeUnknown, ""
	}
	if len(xt.shape) != 2 || !square(xt.shape) || (c.kind != opRename && c.kind != opTranspose) {
		return agreeUnknown, ""
	}
	transposed, plain := 0, 0
	for y, yt := range inf.exp {
		k := inf.chosen[y]
		if y == c.exp || k < 0 || len(yt.shape) != 2 || square(yt.shape) || !sameIndices(yt.dims, xt.dims) || len(yt.dims) == 0 {
			continue
		}
		switch inf.cands[y][k].kind {
		case opTranspose:
			transposed++
		case opRename:
			plain++
		}
	}
	switch {
	case transposed > 0 && plain == 0:
		return agreeOf(c.kind == opTranspose), "every other matrix of its layer is stored transposed"
	case plain > 0 && transposed == 0:
		return agreeOf(c.kind == opRename), "no other matrix of its layer is stored transposed"
	}
	return agreeUnknown, ""
}

func groupsText(g uint64) string {
	if g > 1 {
		return fmt.Sprintf("in %d groups", g)
	}
	return "whole"
}

// checkAgreement replaces each chosen candidate that its names or its
// siblings contradict by the best one they agree with (the samples'
// distance decides among those), and records the conflict: the export
// holds a tensor where its names say another is, or lays one out unlike
// its siblings, in every layer, and the diff must say so rather than map
// it away. Roles first, so that siblings are judged against final choices.
func (inf *Inference) checkAgreement(xs []int) {
	for pass := range 2 {
		for _, x := range xs {
			k := inf.chosen[x]
			if k < 0 {
				continue
			}
			cs := inf.cands[x]
			judge := func(c *candidate) (int, string) {
				if pass == 0 {
					return inf.roleAgreement(c)
				}
				return inf.siblingAgreement(c)
			}
			a, why := judge(&cs[k])
			if a != agreeNo {
				continue
			}
			alt, altAgree := -1, agreeNo
			for j := range cs {
				if j == k {
					continue
				}
				aj, _ := judge(&cs[j])
				if aj < agreeUnknown {
					continue
				}
				if alt < 0 || aj > altAgree || aj == altAgree && cs[j].score < cs[alt].score {
					alt, altAgree = j, aj
				}
			}
			inf.conflicts = append(inf.conflicts, InferConflict{Exported: inf.exp[x].String(), Fits: cs[k].describe(inf.pub), Why: why, Sampled: cs[k].scored})
			if alt < 0 {
				inf.chosen[x] = -1
				inf.why[x] = "it fits " + inf.conflicts[len(inf.conflicts)-1].Fits + ", but " + why
				continue
			}
			inf.chosen[x] = alt
			inf.conflicts[len(inf.conflicts)-1].Mapped = cs[alt].describe(inf.pub)
		}
	}
}

// An InferConflict is an exported template whose shapes or sampled values
// fit a mapping that its names or its siblings contradict: k and v
// swapped, gate and up swapped, a fused QKV in another order, a bias
// split unlike its weight, a square matrix not transposed like the rest of
// its layer. The mapping the names say is taken (Mapped), so the values
// fail on it; empty when no candidate agrees, and the template is left
// unmapped.
type InferConflict struct {
	Exported, Fits, Mapped, Why string
	// Sampled says the samples chose Fits; else the shapes left only it.
	Sampled bool
}

// Summary says it in one line.
func (c InferConflict) Summary() string {
	by := "shapes"
	if c.Sampled {
		by = "sampled values"
	}
	s := c.Exported + ": its " + by + " fit " + c.Fits + ", but " + c.Why
	if c.Mapped != "" {
		return s + "; mapped instead as that says: " + c.Mapped
	}
	return s + "; left unmapped"
}
