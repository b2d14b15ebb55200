package verify

import (
	"encoding/json"
	"fmt"
	"io"
	"math"

	"github.com/ckptcheck/ckptcheck/adapter"
	"github.com/ckptcheck/ckptcheck/internal/textfmt"
)

// A Tolerance is numpy.allclose's rule: |e − p| ≤ Atol + Rtol·|p|. The zero
// Tolerance is exact equality of decoded values (NaN equal to NaN).
type Tolerance struct {
	Atol float64 `json:"atol"`
	Rtol float64 `json:"rtol"`
}

// A Rule gives tensors whose HF name matches a glob (the project's one
// dialect, see adapter.Glob: "*" crosses dots) their own tolerance and
// drift bound, or skips them with a reason. Unset fields fall back to the
// default.
type Rule struct {
	Match string   `json:"match"`
	Atol  *float64 `json:"atol,omitempty"`
	Rtol  *float64 `json:"rtol,omitempty"`
	// MaxRelL2 and MinCosine bound the drift under ExpectDerived.
	MaxRelL2  *float64 `json:"max_rel_l2,omitempty"`
	MinCosine *float64 `json:"min_cosine,omitempty"`
	Skip      string   `json:"skip,omitempty"`
}

// A ValuePolicy says when values are close enough: what is expected of
// them, a default tolerance and drift bound, and per-pattern rules, the
// first match winning.
type ValuePolicy struct {
	// Expect is ExpectEqual (also when empty) or ExpectDerived.
	Expect  Expect
	Default Tolerance
	// Drift is the default drift bound under ExpectDerived; nil means
	// DefaultDrift.
	Drift *DriftBound
	Rules []Rule
	// globs are Rules' patterns compiled once (ReadPolicy, Compile), so
	// that For allocates nothing per tensor.
	globs []*adapter.Glob
}

// Compile returns the policy with its rules' patterns compiled, so that
// For does not compile them for every tensor it is asked about. ReadPolicy
// returns a compiled policy; a policy written as a literal may be
// compiled with this.
func (p ValuePolicy) Compile() ValuePolicy {
	if len(p.Rules) == 0 {
		return p
	}
	p.globs = make([]*adapter.Glob, len(p.Rules))
	for i, r := range p.Rules {
		p.globs[i] = adapter.CompileGlob(r.Match)
	}
	return p
}

// glob is rule i's compiled pattern: the one Compile made when the rule
// has not changed since, else compiled now.
func (p ValuePolicy) glob(i int) *adapter.Glob {
	if i < len(p.globs) && p.globs[i].String() == p.Rules[i].Match {
		return p.globs[i]
	}
	return adapter.CompileGlob(p.Rules[i].Match)
}

// Tolerant reports whether a fine-tune is expected: some tolerance is set.
func (p ValuePolicy) Tolerant() bool {
	if p.Default != (Tolerance{}) {
		return true
	}
	for _, r := range p.Rules {
		if (r.Atol != nil && *r.Atol > 0) || (r.Rtol != nil && *r.Rtol > 0) {
			return true
		}
	}
	return false
}

// rule is the first rule matching name, or nil.
func (p ValuePolicy) rule(name string) *Rule {
	for i := range p.Rules {
		if p.glob(i).Match(name) {
			return &p.Rules[i]
		}
	}
	return nil
}

// For returns the tolerance for a tensor, or the reason it is skipped.
func (p ValuePolicy) For(name string) (Tolerance, string) {
	r := p.rule(name)
	if r == nil {
		return p.Default, ""
	}
	if r.Skip != "" {
		return Tolerance{}, r.Skip
	}
	t := p.Default
	if r.Atol != nil {
		t.Atol = *r.Atol
	}
	if r.Rtol != nil {
		t.Rtol = *r.Rtol
	}
	return t, ""
}

// BoundFor returns the drift bound for a tensor under ExpectDerived.
func (p ValuePolicy) BoundFor(name string) DriftBound {
	b := DefaultDrift
	if p.Drift != nil {
		b = *p.Drift
	}
	if r := p.rule(name); r != nil {
		b = b.with(r.MaxRelL2, r.MinCosine)
	}
	return b
}

// ReadPolicy parses a policy file:
//
//	{"rules":[{"match":"model.layers.*.mlp.gate.weight","rtol":1e-2},
//	          {"match":"*.embed_tokens.weight","max_rel_l2":0.5},
//	          {"match":"*.expert_bias","skip":"not round-trippable"}]}
//
// A "default" object ({"atol":..,"rtol":..,"max_rel_l2":..,"min_cosine":..})
// may set the default tolerance and drift bound. What is expected
// (ValuePolicy.Expect) is the caller's to set, not the file's.
func ReadPolicy(r io.Reader) (ValuePolicy, error) {
	var file struct {
		Default *struct {
			Atol      float64  `json:"atol"`
			Rtol      float64  `json:"rtol"`
			MaxRelL2  *float64 `json:"max_rel_l2"`
			MinCosine *float64 `json:"min_cosine"`
		} `json:"default"`
		Rules []Rule `json:"rules"`
	}
	dec := json.NewDecoder(io.LimitReader(r, 16<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&file); err != nil {
		return ValuePolicy{}, fmt.Errorf("policy: %v", textfmt.JSONError(err))
	}
	// A second object would be silently ignored, and its rules with it.
	if _, err := dec.Token(); err != io.EOF {
		return ValuePolicy{}, fmt.Errorf("policy: text after the policy object (at byte %d)", dec.InputOffset())
	}
	var p ValuePolicy
	if d := file.Default; d != nil {
		p.Default = Tolerance{Atol: d.Atol, Rtol: d.Rtol}
		if d.MaxRelL2 != nil || d.MinCosine != nil {
			b := DefaultDrift.with(d.MaxRelL2, d.MinCosine)
			p.Drift = &b
		}
		if err := checkDriftBound(d.MaxRelL2, d.MinCosine); err != nil {
			return ValuePolicy{}, fmt.Errorf("policy: default: %v", err)
		}
	}
	if err := checkTolerance(p.Default); err != nil {
		return ValuePolicy{}, fmt.Errorf("policy: default: %v", err)
	}
	for i, rule := range file.Rules {
		if rule.Match == "" {
			return ValuePolicy{}, fmt.Errorf("policy: rule %d: empty match pattern", i+1)
		}
		if rule.Skip == "" && rule.Atol == nil && rule.Rtol == nil && rule.MaxRelL2 == nil && rule.MinCosine == nil {
			return ValuePolicy{}, fmt.Errorf("policy: rule %d (%s): says neither a tolerance nor skip (nor max_rel_l2, min_cosine)", i+1, rule.Match)
		}
		for _, v := range []*float64{rule.Atol, rule.Rtol} {
			if v != nil && (*v < 0 || math.IsNaN(*v) || math.IsInf(*v, 0)) {
				return ValuePolicy{}, fmt.Errorf("policy: rule %d (%s): tolerances must be finite and non-negative", i+1, rule.Match)
			}
		}
		if err := checkDriftBound(rule.MaxRelL2, rule.MinCosine); err != nil {
			return ValuePolicy{}, fmt.Errorf("policy: rule %d (%s): %v", i+1, rule.Match, err)
		}
	}
	p.Rules = file.Rules
	return p.Compile(), nil
}

func checkTolerance(t Tolerance) error {
	for _, v := range []float64{t.Atol, t.Rtol} {
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("tolerances must be finite and non-negative, not %v", v)
		}
	}
	return nil
}

// checkDriftBound checks a drift bound's fields that are set.
func checkDriftBound(maxRelL2, minCosine *float64) error {
	if v := maxRelL2; v != nil && (*v < 0 || math.IsNaN(*v) || math.IsInf(*v, 0)) {
		return fmt.Errorf("max_rel_l2 must be finite and non-negative, not %v", *v)
	}
	if v := minCosine; v != nil && !(*v >= -1 && *v <= 1) {
		return fmt.Errorf("min_cosine must be between -1 and 1, not %v", *v)
	}
	return nil
}
