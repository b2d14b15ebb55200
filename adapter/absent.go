package adapter

import (
	"fmt"
	"strconv"
	"strings"
)

// An Absent names tensors of the other side, in Hugging Face naming, that
// this side holds in no form its adapter reads: the conversion leaves them
// out (a vision tower written to a separate file, multi-token-prediction
// layers), or holds them in a layout the adapter cannot rebuild (llama.cpp's
// per-head split of DeepSeek's kv_b_proj). Glob is a Glob over those names;
// Reason says why, Rule is the rule that says it. A comparison reports them
// once a rule, not as a missing key each.
type Absent struct {
	Glob, Reason, Rule string
	glob               *Glob
}

// An absentRule is an "absent" line: a glob whose segments in braces are
// expressions over config values, and the reason.
type absentRule struct {
	segs            []string
	exprs           []*expr // by segment; nil for a literal segment
	pattern, reason string
	line            int
}

// parseAbsent reads "absent GLOB REASON...".
func parseAbsent(args []string) (*absentRule, error) {
	if len(args) < 2 {
		return nil, fmt.Errorf("absent takes a glob of the other side's names and the reason")
	}
	r := &absentRule{segs: strings.Split(args[0], "."), pattern: args[0], reason: strings.Join(args[1:], " ")}
	r.exprs = make([]*expr, len(r.segs))
	for i, seg := range r.segs {
		if !isCapture(seg) {
			if strings.ContainsAny(seg, "{}") {
				return nil, fmt.Errorf("absent %s: %q is neither literal nor an expression in braces", args[0], seg)
			}
			continue
		}
		e, err := parseExpr(seg[1 : len(seg)-1])
		if err != nil {
			return nil, fmt.Errorf("absent %s: %v", args[0], err)
		}
		if _, err := e.eval(nil, true); err != nil {
			return nil, fmt.Errorf("absent %s: %v", args[0], err)
		}
		r.exprs[i] = e
	}
	return r, nil
}

// glob is the rule's glob with its expressions evaluated; false when a
// config value it reads is not known (nothing is then said absent).
func (r *absentRule) glob(env Env) (string, bool) {
	segs := make([]string, len(r.segs))
	for i, seg := range r.segs {
		segs[i] = seg
		if e := r.exprs[i]; e != nil {
			v, err := e.eval(env, false)
			if err != nil {
				return "", false
			}
			segs[i] = strconv.FormatInt(v, 10)
		}
	}
	return strings.Join(segs, "."), true
}

// absent lists what the chain's adapters say the other side has and this
// side does not hold.
func (c Chain) absent(env Env) []Absent {
	var out []Absent
	for _, a := range c {
		for _, r := range a.absent {
			if g, ok := r.glob(env); ok {
				out = append(out, Absent{Glob: g, Reason: r.reason, Rule: a.Name + ":" + strconv.Itoa(r.line) + ": absent " + r.pattern, glob: CompileGlob(g)})
			}
		}
	}
	return out
}

// AbsentFor returns the index in Absent of the first that names the other
// side's tensor name, or -1.
func (v *View) AbsentFor(name string) int {
	for i, a := range v.Absent {
		if a.glob.Match(name) {
			return i
		}
	}
	return -1
}
