package verify

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/adapter"
)

func TestReadPolicy(t *testing.T) {
	p, err := ReadPolicy(strings.NewReader(`{"default":{"atol":1e-6},"rules":[{"match":"model.layers.*.mlp.gate.weight","rtol":1e-2},{"match":"*.expert_bias","skip":"not round-trippable"},{"match":"*.bias","atol":0}]}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		tol  Tolerance
		skip string
	}{
		{"model.layers.3.mlp.gate.weight", Tolerance{Atol: 1e-6, Rtol: 1e-2}, ""},
		{"model.layers.3.mlp.expert_bias", Tolerance{}, "not round-trippable"},
		{"model.layers.3.self_attn.q_proj.bias", Tolerance{}, ""}, // atol 0 overrides the default
		{"model.norm.weight", Tolerance{Atol: 1e-6}, ""},
	} {
		if tol, skip := p.For(tt.name); tol != tt.tol || skip != tt.skip {
			t.Errorf("%s: %v %q, want %v %q", tt.name, tol, skip, tt.tol, tt.skip)
		}
	}
	if !p.Tolerant() {
		t.Error("a policy with tolerances is tolerant")
	}
	for _, tt := range []struct{ in, want string }{
		{`{`, "unexpected EOF"},
		{``, "EOF"},
		{`[]`, "not an object"},
		{`{"rules":[{"match":"["}]}`, "neither a tolerance nor skip"},
		{`{"rules":[{"match":"","skip":"x"}]}`, "empty match pattern"},
		{`{"rules":[{"match":"*","rtol":-1}]}`, "finite and non-negative"},
		{`{"rules":[{"match":"*","atol":1e999}]}`, "rules.atol"},
		{`{"rules":[{"match":1,"skip":"x"}]}`, "rules.match"},
		{`{"rulez":[]}`, `unknown field "rulez"`},
		{`{"default":{"atol":-1}}`, "finite and non-negative"},
		{`{"default":{"rtol":"1"}}`, "default.rtol"},
		{`{"rules":[]} {"rules":[{"match":"*","skip":"x"}]}`, "after the policy object"},
		{`{"rules":[]} x`, "after the policy object"},
	} {
		p, err := ReadPolicy(strings.NewReader(tt.in))
		if err == nil || !strings.HasPrefix(err.Error(), "policy: ") || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want one that starts with \"policy: \" and says %q", tt.in, err, tt.want)
		}
		if !reflect.DeepEqual(p, ValuePolicy{}) {
			t.Errorf("%s: %+v with an error, want the zero policy", tt.in, p)
		}
	}
}

// policyFile is the file form of a policy, as ReadPolicy reads it.
type policyFile struct {
	Default Tolerance `json:"default"`
	Rules   []Rule    `json:"rules"`
}

// FuzzReadPolicy: a policy that parses has finite, non-negative
// tolerances and rules that each say a tolerance or skip; For never
// returns a negative or non-finite tolerance, skips with a zero one, and
// agrees with the first rule that matches; written back as JSON the
// policy reads back the same. An error names the policy and holds no Go
// internals.
func FuzzReadPolicy(f *testing.F) {
	f.Add([]byte(`{"rules":[{"match":"*.w","rtol":1e-2},{"match":"*","skip":"x"}]}`))
	f.Add([]byte(`{"default":{"atol":1e-6,"rtol":0},"rules":[{"match":"model.*","atol":0.5},{"match":"?","rtol":1e308}]}`))
	f.Add([]byte(`{"default":{"atol":-1}}`))
	f.Add([]byte(`{"rules":[{"match":"a","skip":"y"}]} {}`))
	names := []string{"model.layers.0.mlp.gate.weight", "model.norm.weight", "lm_head.weight", "", "a"}
	finite := func(tol Tolerance) bool {
		return checkTolerance(tol) == nil
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ReadPolicy(strings.NewReader(string(b)))
		if err != nil {
			msg := err.Error()
			if !strings.HasPrefix(msg, "policy: ") || strings.Contains(msg, "Go ") || strings.Contains(msg, "json: ") || strings.Contains(msg, "\n") {
				t.Fatalf("error %q", msg)
			}
			if !reflect.DeepEqual(p, ValuePolicy{}) {
				t.Fatalf("policy %+v with an error", p)
			}
			return
		}
		if !finite(p.Default) {
			t.Fatalf("default %+v", p.Default)
		}
		tolerant := p.Default != (Tolerance{})
		for i, r := range p.Rules {
			if r.Match == "" || (r.Skip == "" && r.Atol == nil && r.Rtol == nil) {
				t.Fatalf("rule %d says nothing: %+v", i, r)
			}
			for _, v := range []*float64{r.Atol, r.Rtol} {
				if v != nil {
					if !finite(Tolerance{Atol: *v}) {
						t.Fatalf("rule %d: tolerance %v", i, *v)
					}
					tolerant = tolerant || *v > 0
				}
			}
		}
		if p.Tolerant() != tolerant {
			t.Fatalf("Tolerant() = %v for %+v", p.Tolerant(), p)
		}
		for _, name := range append(slices.Clone(names), ruleMatches(p)...) {
			tol, skip := p.For(name)
			if !finite(tol) || (skip != "" && tol != (Tolerance{})) {
				t.Fatalf("For(%q) = %+v, %q", name, tol, skip)
			}
			want, wantSkip := p.Default, ""
			for _, r := range p.Rules {
				if adapter.CompileGlob(r.Match).Match(name) {
					want, wantSkip = Tolerance{}, r.Skip
					if r.Skip == "" {
						want = p.Default
						if r.Atol != nil {
							want.Atol = *r.Atol
						}
						if r.Rtol != nil {
							want.Rtol = *r.Rtol
						}
					}
					break
				}
			}
			if tol != want || skip != wantSkip {
				t.Fatalf("For(%q) = %+v %q, the first matching rule says %+v %q", name, tol, skip, want, wantSkip)
			}
		}
		// Round trip.
		out, err := json.Marshal(policyFile{p.Default, p.Rules})
		if err != nil {
			t.Fatal(err)
		}
		again, err := ReadPolicy(bytes.NewReader(out))
		if err != nil || !reflect.DeepEqual(again, p) {
			t.Fatalf("%s read back as %+v, %v; want %+v", out, again, err, p)
		}
	})
}

// ruleMatches lists each rule's pattern as a name, with its wildcards
// read as literal text: names that the rules are about.
func ruleMatches(p ValuePolicy) []string {
	var out []string
	for _, r := range p.Rules {
		out = append(out, r.Match, strings.NewReplacer("*", "", "?", "x").Replace(r.Match))
	}
	return out
}

// TestPolicyCompilesOnce: a policy's patterns are compiled when it is
// read, not for every tensor: a glob of a hundred thousand stars matched
// against many names allocates nothing.
func TestPolicyCompilesOnce(t *testing.T) {
	huge := strings.Repeat("*", 100_000) + ".bias"
	p, err := ReadPolicy(strings.NewReader(`{"rules":[{"match":"` + huge + `","skip":"x"},{"match":"*.weight","rtol":1e-2}]}`))
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"model.layers.0.mlp.up_proj.weight", "model.norm.bias", "lm_head.weight"}
	allocs := testing.AllocsPerRun(100, func() {
		for _, n := range names {
			p.For(n)
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per run of For, want 0", allocs)
	}
	if _, skip := p.For("model.norm.bias"); skip != "x" {
		t.Errorf("skip %q", skip)
	}
	// A literal policy compiled by hand behaves the same.
	lit := ValuePolicy{Rules: []Rule{{Match: huge, Skip: "x"}}}.Compile()
	if a := testing.AllocsPerRun(10, func() { lit.For("a.bias") }); a != 0 {
		t.Errorf("literal: %v allocations", a)
	}
}

// TestReadPolicyDrift: max_rel_l2 and min_cosine set the drift bound, as
// the default and per rule, each falling back to the default on its own.
func TestReadPolicyDrift(t *testing.T) {
	p, err := ReadPolicy(strings.NewReader(`{"default":{"max_rel_l2":0.3},"rules":[{"match":"*.embed_tokens.weight","min_cosine":0.8},{"match":"*.bias","skip":"x"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]DriftBound{
		"model.embed_tokens.weight": {MaxRelL2: 0.3, MinCosine: 0.8},
		"model.norm.weight":         {MaxRelL2: 0.3, MinCosine: 0.95},
	} {
		if got := p.BoundFor(name); got != want {
			t.Errorf("%s: %v, want %v", name, got, want)
		}
	}
	if p.Tolerant() {
		t.Error("a drift bound is not a tolerance")
	}
	if got := (ValuePolicy{}).BoundFor("x"); got != DefaultDrift {
		t.Errorf("no policy: %v, want %v", got, DefaultDrift)
	}
	for _, tt := range []struct{ in, want string }{
		{`{"rules":[{"match":"*","max_rel_l2":-1}]}`, "max_rel_l2 must be finite and non-negative"},
		{`{"rules":[{"match":"*","min_cosine":1.5}]}`, "min_cosine must be between -1 and 1"},
		{`{"default":{"min_cosine":-2}}`, "default: min_cosine"},
		{`{"default":{"expect":"derived"}}`, `unknown field "expect"`},
	} {
		if _, err := ReadPolicy(strings.NewReader(tt.in)); err == nil || !strings.HasPrefix(err.Error(), "policy: ") || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want %q", tt.in, err, tt.want)
		}
	}
}
