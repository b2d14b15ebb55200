package report

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/safetensors"
	"github.com/ckptcheck/ckptcheck/verify"
)

func text(t *testing.T, r *verify.Report, opt Options) string {
	t.Helper()
	var b strings.Builder
	if err := Write(&b, "text", r, opt); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestCollapsedText(t *testing.T) {
	var fs []verify.Finding
	for l := range 36 {
		fs = append(fs, verify.Finding{Code: verify.CodeMissingKey, Severity: verify.Error, Key: fmt.Sprintf("model.layers.%d.self_attn.k_norm.weight", l), Message: "in published, missing from exported"})
		fs = append(fs, verify.Finding{Code: verify.CodeDTypeMismatch, Severity: verify.Warning, Key: fmt.Sprintf("model.layers.%d.mlp.up_proj.weight", l), Message: "published BF16, exported F32", Published: safetensors.BF16, Exported: safetensors.F32})
	}
	fs = append(fs, verify.Finding{Code: verify.CodeMissingKey, Severity: verify.Error, Key: "model.layers.3.mlp.experts.7.up_proj.weight", Message: "in published, missing from exported"})
	fs = append(fs, verify.Finding{Code: verify.CodeMissingKey, Severity: verify.Error, Key: "model.layers.5.mlp.experts.1.up_proj.weight", Message: "in published, missing from exported"})
	out := text(t, verify.NewReport("diff", verify.Error, nil, fs), Options{})
	for _, want := range []string{
		"FAIL: 38 errors, 36 warnings\n",
		"model.layers.{0..35}.self_attn.k_norm.weight: in published, missing from exported\n",
		"model.layers.{3,5}.mlp.experts.{1,7}.up_proj.weight: in published, missing from exported (2 keys)\n",
		"36 tensors BF16 → F32\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
	if strings.Index(out, "missing_key") > strings.Index(out, "dtype_mismatch") {
		t.Error("errors must come first")
	}
	verbose := text(t, verify.NewReport("diff", verify.Error, nil, fs), Options{Verbose: true})
	if n := strings.Count(verbose, "\n  "); n != len(fs) {
		t.Errorf("verbose lists %d lines, want %d", n, len(fs))
	}
}

func TestVerdict(t *testing.T) {
	e := verify.Finding{Code: verify.CodeMissingKey, Severity: verify.Error, Message: "m"}
	w := verify.Finding{Code: verify.CodeDTypeMismatch, Severity: verify.Warning, Message: "m"}
	tests := []struct {
		failOn   verify.Severity
		findings []verify.Finding
		want     string
	}{
		{verify.Error, nil, "OK"},
		{verify.Error, []verify.Finding{w, w}, "OK (2 warnings)"},
		{verify.Warning, []verify.Finding{w}, "FAIL: 1 warning"},
		{verify.Error, []verify.Finding{e, w}, "FAIL: 1 error, 1 warning"},
		{verify.Never, []verify.Finding{e}, "ERRORS: 1 error (not failing: --fail-on never)"},
	}
	for _, tt := range tests {
		if got := Verdict(verify.NewReport("x", tt.failOn, nil, tt.findings)); got != tt.want {
			t.Errorf("fail-on %s, %d findings: %q, want %q", tt.failOn, len(tt.findings), got, tt.want)
		}
	}
}

func TestHostileNamesEscaped(t *testing.T) {
	f := verify.Finding{Code: verify.CodeMissingKey, Severity: verify.Error, Key: "a\x1b[2Jb", File: "f\rg", Message: "x\x07"}
	out := text(t, verify.NewReport("diff", verify.Error, nil, []verify.Finding{f}), Options{})
	if strings.ContainsAny(out, "\x1b\r\x07") {
		t.Errorf("control characters reached the output: %q", out)
	}
}

func TestLowKeyOverlapLeads(t *testing.T) {
	fs := []verify.Finding{
		{Code: verify.CodeMissingKey, Severity: verify.Error, Key: "a", Message: "m"},
		{Code: verify.CodeLowKeyOverlap, Severity: verify.Warning, Message: "only 0 of 1"},
	}
	out := text(t, verify.NewReport("diff", verify.Error, nil, fs), Options{})
	if strings.Index(out, "low_key_overlap") > strings.Index(out, "missing_key") {
		t.Errorf("the diagnosis must come first:\n%s", out)
	}
}

func TestSkippedListed(t *testing.T) {
	v := &verify.ValueReport{Compared: 0, Skipped: 3}
	for l := range 3 {
		var s verify.TensorStats
		s.Key = fmt.Sprintf("model.layers.%d.mlp.expert_bias", l)
		s.Skipped = "not round-trippable"
		v.Tensors = append(v.Tensors, s)
	}
	r := verify.NewReport("diff", verify.Error, nil, nil)
	r.Values = v
	out := text(t, r, Options{})
	if !strings.Contains(out, "not compared (3)\n  model.layers.{0..2}.mlp.expert_bias: not round-trippable\n") {
		t.Errorf("skipped tensors not listed:\n%s", out)
	}
}

func TestColumnsAlignWideNames(t *testing.T) {
	var b strings.Builder
	Table(&b, nil, [][]string{{"名前名前", "x"}, {"ab", "y"}, {"🙂", "z"}})
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines for 3 rows:\n%s", len(lines), b.String())
	}
	// The second column starts after the last space of each line.
	col := func(s string) int { return width(s[:strings.LastIndexByte(s, ' ')+1]) }
	if col(lines[0]) != col(lines[1]) || col(lines[1]) != col(lines[2]) {
		t.Errorf("columns not aligned:\n%s", b.String())
	}
}

func TestUnknownFormat(t *testing.T) {
	if err := Write(&strings.Builder{}, "xml", verify.NewReport("x", verify.Error, nil, nil), Options{}); err == nil {
		t.Error("want an error for an unknown format")
	}
}
