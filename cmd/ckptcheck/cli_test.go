package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// TestCommandLine covers what people type: commands, flags as they spell
// them, and the messages they get back.
func TestCommandLine(t *testing.T) {
	pub, exp := "../../testdata/published", "../../testdata/exported"
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout []string // substrings
		stderr []string
	}{
		{"bare", nil, 2, []string{"USAGE"}, []string{"no command given"}},
		{"unknown command", []string{"validat", pub}, 2, nil, []string{`unknown command "validat"`, `did you mean "validate"?`}},
		{"version", []string{"--version"}, 0, []string{"ckptcheck "}, nil},
		{"flag named as typed", []string{"validate", pub, "--fail-on", "sometimes"}, 2, nil, []string{"--fail-on", `unknown severity "sometimes"`}},
		{"unknown flag", []string{"validate", pub, "--frobnicate"}, 2, nil, []string{"unknown flag --frobnicate"}},
		{"short flags combine", []string{"diff", "-vq", pub, exp}, 1, []string{"FAIL"}, nil},
		{"depth without tree", []string{"inspect", pub, "--depth", "1"}, 2, nil, []string{"--depth needs --tree"}},
		{"filter matching nothing", []string{"inspect", pub, "--filter", "nothing.*"}, 0, []string{"no tensor matches --filter nothing.*"}, nil},
		{"inspect honours fail-on", []string{"inspect", exp, "--fail-on", "info", "--ignore", "config_mismatch"}, 0, nil, nil},
		{"fail-on never is not OK", []string{"diff", pub, exp, "--fail-on", "never"}, 0, []string{fmt.Sprintf("ERRORS: 1 error, %d warnings, 1 info (not failing: --fail-on never)", exportedN)}, nil},
		{"ignore counts", []string{"diff", pub, exp, "--ignore", "dtype_mismatch"}, 1, []string{fmt.Sprintf("FAIL: 1 error, 1 info, %d ignored", exportedN)}, nil},
		{"ignore by key", []string{"diff", pub, exp, "--ignore", "missing_key=model.layers.2.*", "--ignore", "dtype_mismatch"}, 0, []string{fmt.Sprintf("OK (1 info, %d ignored)", exportedN+1)}, nil},
		{"unknown ignore code", []string{"diff", pub, exp, "--ignore", "missing_keys"}, 2, nil, []string{`no finding code "missing_keys"`}},
		{"adapter chain with commas", []string{"diff", pub, exp, "--adapter", "exported=torchtitan-hf,compile"}, 1, []string{"adapter compile,torchtitan-hf"}, nil},
		{"explain unknown key", []string{"diff", pub, exp, "--explain", "no.such.key"}, 2, []string{"no tensor of that name"}, []string{`no tensor "no.such.key"`}},
		{"explain tied head", []string{"diff", pub, exp, "--explain", "lm_head.weight"}, 2, []string{"tied to the input embedding"}, nil},
		{"adapters NAME json", []string{"adapters", "torchtitan-llama3", "--format", "json"}, 0, []string{`"name": "torchtitan-llama3"`, `"source": `}, nil},
	}
	for _, tt := range tests {
		code, stdout, stderr := ckptcheck(t, tt.args...)
		if code != tt.code {
			t.Errorf("%s: exit %d, want %d\nstdout %s\nstderr %s", tt.name, code, tt.code, stdout, stderr)
		}
		for _, want := range tt.stdout {
			if !strings.Contains(stdout, want) {
				t.Errorf("%s: stdout lacks %q:\n%s", tt.name, want, stdout)
			}
		}
		for _, want := range tt.stderr {
			if !strings.Contains(stderr, want) {
				t.Errorf("%s: stderr lacks %q:\n%s", tt.name, want, stderr)
			}
		}
		if code == 2 && tt.name != "bare" && strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
			t.Errorf("%s: exit 2 wants one line on stderr, got %q", tt.name, stderr)
		}
	}
}

// TestRenameKeepsCommas: a --rename regexp with a {1,2} counter is one
// value, not two.
func TestRenameKeepsCommas(t *testing.T) {
	dir := t.TempDir()
	var ts []fixture.Tensor
	for _, x := range fixture.Tiny.Tensors(safetensors.BF16) {
		x.Name = "model.model." + strings.TrimPrefix(x.Name, "model.")
		ts = append(ts, x)
	}
	fixture.WriteFile(filepath.Join(dir, "model.safetensors"), ts, nil)
	code, out, stderr := ckptcheck(t, "diff", "../../testdata/published", dir, "--adapter", "hf", "--rename", `^(model\.){1,2}(.*)$=model.$2`)
	if code != 0 || !strings.Contains(out, "OK") {
		t.Errorf("exit %d\n%s\n%s", code, out, stderr)
	}
}

func TestExplainJSONCarriesSchema(t *testing.T) {
	_, out, _ := ckptcheck(t, "diff", "../../testdata/published", "../../testdata/exported", "--explain", "model.norm.weight", "--format", "json")
	var rep struct {
		Schema      string
		Explanation struct{ Key string }
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Schema != "ckptcheck.report/v1" || rep.Explanation.Key != "model.norm.weight" {
		t.Errorf("%v: %s", err, out)
	}
}

// TestVariants: validate checks every variant of a directory as its own
// checkpoint (an input each); diff and inspect read the plain one unless
// --variant says. A directory of variants and no plain one is inspected
// variant by variant, and diff asks which (exit 2).
func TestVariants(t *testing.T) {
	bf16 := fixture.Tiny.Tensors(safetensors.BF16)
	var up []fixture.Tensor
	for _, x := range bf16 {
		up = append(up, fixture.Upcast(x))
	}
	for _, tt := range []struct {
		name, plain string // plain is the other file beside model.fp32.safetensors
		variants    []string
		inspected   []string // the variants inspect lists, one each; nil: the plain one alone
	}{
		{name: "beside the plain one", plain: "model.safetensors", variants: []string{"", "fp32"}},
		{name: "no plain one", plain: "model.fp16.safetensors", variants: []string{"fp16", "fp32"}, inspected: []string{"fp16", "fp32"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			fixture.WriteFile(filepath.Join(dir, tt.plain), bf16, nil)
			fixture.WriteFile(filepath.Join(dir, "model.fp32.safetensors"), up, nil)
			var rep struct {
				Inputs []struct {
					Variant string
					Files   []string
				}
				Findings    []struct{ Code string }
				Inspections []struct{ Variant string }
			}
			code, out, _ := ckptcheck(t, "validate", dir, "--format", "json")
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatal(err)
			}
			var variants []string
			for _, in := range rep.Inputs {
				variants = append(variants, in.Variant)
			}
			if code != 0 || !slices.Equal(variants, tt.variants) {
				t.Errorf("exit %d, inputs %q, want %q: %+v", code, variants, tt.variants, rep)
			}
			for _, f := range rep.Findings {
				if f.Code == "duplicate_key_across_shards" {
					t.Error("variants are not shards of one checkpoint")
				}
				if f.Code == "variants" {
					t.Error("every variant was checked: no note that the others were not")
				}
			}
			code, out, _ = ckptcheck(t, "inspect", dir, "--format", "json")
			rep.Inspections = nil
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatal(err)
			}
			var inspected []string
			for _, ins := range rep.Inspections {
				inspected = append(inspected, ins.Variant)
			}
			if code != 0 || !slices.Equal(inspected, tt.inspected) {
				t.Errorf("inspect: exit %d, inspected %q, want %q", code, inspected, tt.inspected)
			}
			if code, out, _ := ckptcheck(t, "diff", "../../testdata/published", dir, "--variant", "fp32"); code != 0 || !strings.Contains(out, "variant fp32") {
				t.Errorf("diff --variant fp32: exit %d\n%s", code, out)
			}
			if code, _, _ := ckptcheck(t, "diff", "../../testdata/published", dir, "--variant", "int4"); code != 2 {
				t.Errorf("an unknown variant: exit %d", code)
			}
			code, _, stderr := ckptcheck(t, "diff", "../../testdata/published", dir)
			if tt.inspected != nil && (code != 2 || !strings.Contains(stderr, "holds 2 checkpoints, one per variant, and no plain one: choose one with --variant (fp16, fp32)")) {
				t.Errorf("diff of variants without --variant: exit %d\n%s", code, stderr)
			}
		})
	}
}

// TestInputChangedDuringRun: a shard that grows while it is read (a trainer
// still writing) stops the run with exit 2.
func TestInputChangedDuringRun(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "model.safetensors")
	fixture.WriteFile(p, fixture.Tiny.Tensors(safetensors.BF16), nil)
	testHookAfterOpen = func() {
		f, _ := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
		f.Write([]byte("more"))
		f.Close()
	}
	defer func() { testHookAfterOpen = nil }()
	code, _, stderr := ckptcheck(t, "validate", p)
	if code != 2 || !strings.Contains(stderr, "input changed during the run") {
		t.Errorf("exit %d, %s", code, stderr)
	}
}
