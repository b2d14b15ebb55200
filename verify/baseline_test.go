package verify

import (
	"bytes"
	"strings"
	"testing"
)

func TestAcceptedMatches(t *testing.T) {
	f := Finding{Code: CodeDTypeMismatch, Severity: Warning, Key: "model.layers.3.mlp.up_proj.weight", File: "exp/model.safetensors", Side: Exported}
	summary := Finding{Code: CodeUnchanged, Severity: Info, Keys: []string{"model.layers.0.mlp.gate.weight", "model.layers.1.mlp.gate.weight"}}
	tests := []struct {
		code            Code
		key, file, side string
		finding         Finding
		want            bool
	}{
		{CodeDTypeMismatch, "", "", "", f, true},
		{CodeDTypeMismatch, "model.layers.*", "", "", f, true},
		{CodeDTypeMismatch, "model.layers.?.mlp.*", "", "exported", f, true},
		{CodeDTypeMismatch, "*.down_proj.weight", "", "", f, false},
		{CodeDTypeMismatch, "", "*.safetensors", "", f, true},
		{CodeDTypeMismatch, "", "pub/*", "", f, false},
		{CodeDTypeMismatch, "", "", "published", f, false},
		{CodeShapeMismatch, "", "", "", f, false},
		{CodeUnchanged, "*.mlp.gate.weight", "", "", summary, true},
		{CodeUnchanged, "model.layers.0.*", "", "", summary, false}, // every key it lists must match
	}
	for _, tt := range tests {
		a, err := NewAccepted(tt.code, tt.key, tt.file, Side(tt.side), "why")
		if err != nil {
			t.Fatal(err)
		}
		if got := a.Matches(&tt.finding); got != tt.want {
			t.Errorf("%s %q %q %q matches %v = %v", tt.code, tt.key, tt.file, tt.side, tt.finding, got)
		}
	}
	for _, bad := range []struct {
		code         Code
		side, reason string
	}{{"no_such_code", "", "why"}, {CodeDTypeMismatch, "left", "why"}, {CodeDTypeMismatch, "", ""}} {
		if _, err := NewAccepted(bad.code, "", "", Side(bad.side), bad.reason); err == nil {
			t.Errorf("%v: want an error", bad)
		}
	}
}

func TestBaselineApply(t *testing.T) {
	findings := []Finding{
		{Code: CodeDTypeMismatch, Severity: Warning, Key: "a.weight"},
		{Code: CodeMissingKey, Severity: Error, Key: "model.layers.2.self_attn.k_norm.weight"},
		{Code: CodeTiedWeight, Severity: Info, Key: "lm_head.weight"},
	}
	r := NewReport("diff", Error, nil, findings)
	if r.OK {
		t.Fatal("a missing key must fail")
	}
	accept := func(code Code, key, reason string) *Accepted {
		a, err := NewAccepted(code, key, "", "", reason)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	b := &Baseline{Source: ".ckptcheck.yaml", Accepted: []*Accepted{
		accept(CodeMissingKey, "*.k_norm.weight", "dropped on purpose"),
		accept(CodeMissingKey, "*", "never reached"),
	}}
	b.Apply(r)
	if !r.OK || len(r.Findings) != 2 || len(r.Suppressed) != 1 || r.Summary.Suppressed != 1 || r.Summary.Error != 0 || r.Baseline != ".ckptcheck.yaml" {
		t.Fatalf("%+v", r)
	}
	if s := r.Suppressed[0]; s.Reason != "dropped on purpose" || s.Code != CodeMissingKey {
		t.Errorf("%+v", s)
	}
	var buf bytes.Buffer
	r.WriteJSON(&buf)
	for _, want := range []string{`"suppressed": 1`, `"reason": "dropped on purpose"`, `"baseline": ".ckptcheck.yaml"`} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("JSON lacks %s:\n%s", want, buf.String())
		}
	}
	back, err := ReadReport(&buf)
	if err != nil || len(back.Suppressed) != 1 || back.Suppressed[0].Key != "model.layers.2.self_attn.k_norm.weight" {
		t.Errorf("read back: %+v, %v", back, err)
	}
	var none *Baseline
	none.Apply(r) // a nil baseline accepts nothing
	if len(r.Findings) != 2 {
		t.Error("nil baseline changed the report")
	}
}
