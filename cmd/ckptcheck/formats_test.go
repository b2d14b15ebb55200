package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/report"
)

func TestEveryFormat(t *testing.T) {
	t.Setenv("GITHUB_STEP_SUMMARY", "")
	good := tinyCheckpoint(t)
	want := map[string]string{ // how each format starts
		"text": "", "json": "{", "github": "ckptcheck ", "markdown": "### ", "junit": "<?xml",
		"sarif": "{", "html": "<!DOCTYPE html>",
	}
	for _, f := range report.Formats() {
		prefix, ok := want[f]
		if !ok {
			t.Errorf("format %s is not tested here", f)
			continue
		}
		for _, tt := range []struct {
			args []string
			code int
		}{
			{[]string{"validate", good}, 0},
			{[]string{"inspect", good}, 0},
			{[]string{"diff", "../../testdata/published", "../../testdata/exported"}, 1},
		} {
			code, out, stderr := ckptcheck(t, append(tt.args, "--format", f)...)
			if code != tt.code {
				t.Errorf("%v --format %s: exit %d, want %d (%s)", tt.args, f, code, tt.code, stderr)
			}
			if tt.args[0] != "inspect" && !strings.HasPrefix(out, prefix) {
				t.Errorf("%v --format %s: output starts %.40q", tt.args, f, out)
			}
		}
	}
	if code, _, stderr := ckptcheck(t, "validate", good, "--format", "yaml"); code != 2 || !strings.Contains(stderr, "github, html, json, junit, markdown, sarif, text") {
		t.Errorf("an unknown format: exit %d, %q", code, stderr)
	}
	for _, cmd := range []string{"codes", "adapters"} {
		if code, _, _ := ckptcheck(t, cmd, "--format", "sarif"); code != 2 {
			t.Errorf("%s --format sarif: exit %d, want 2 (a listing is text or json)", cmd, code)
		}
	}
}

func TestStepSummary(t *testing.T) {
	summary := filepath.Join(t.TempDir(), "summary.md")
	os.WriteFile(summary, []byte("earlier step\n"), 0o644)
	t.Setenv("GITHUB_STEP_SUMMARY", summary)
	code, out, _ := ckptcheck(t, "diff", "../../testdata/published", "../../testdata/exported", "--format", "github")
	if code != 1 || !strings.Contains(out, "::error title=ckptcheck missing_key::") {
		t.Errorf("exit %d:\n%s", code, out)
	}
	b, _ := os.ReadFile(summary)
	if !strings.HasPrefix(string(b), "earlier step\n### ❌ ckptcheck diff: FAIL") {
		t.Errorf("the summary is not appended:\n%s", b)
	}
	// Other formats leave it alone.
	ckptcheck(t, "diff", "../../testdata/published", "../../testdata/exported", "--format", "json")
	if b2, _ := os.ReadFile(summary); len(b2) != len(b) {
		t.Error("--format json wrote the step summary")
	}
}

func TestHTMLFlag(t *testing.T) {
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	code, out, stderr := ckptcheck(t, "diff", "../../testdata/published", "../../testdata/exported", "--values", "--html", page, "--format", "json")
	if code != 1 || !strings.HasPrefix(out, "{") {
		t.Fatalf("exit %d (%s): the usual output must still go to stdout", code, stderr)
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`id="heatmap"`, `data-status="missing"`, "FAIL: 1 error, 45 warnings", "testdata/exported"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	// Without --values: the page, no heatmap.
	ckptcheck(t, "diff", "../../testdata/published", "../../testdata/exported", "--html", page)
	if b, _ := os.ReadFile(page); strings.Contains(string(b), `id="heatmap"`) || !strings.Contains(string(b), "missing_key") {
		t.Error("without --values the page has findings and no heatmap")
	}
	for _, args := range [][]string{
		{"--html", filepath.Join(dir, "no", "such", "dir", "r.html")},
		{"--html", page, "--explain", "lm_head.weight"},
	} {
		code, _, stderr := ckptcheck(t, append([]string{"diff", "../../testdata/published", "../../testdata/exported"}, args...)...)
		if code != 2 || !strings.Contains(stderr, "--html") {
			t.Errorf("%v: exit %d, %q", args, code, stderr)
		}
	}
}
