package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/verify"
)

var schema = Schema{
	"diff":     {"adapter": true, "values": false, "fail-on": false, "atol": false, "format": false},
	"validate": {"hashes": false, "fail-on": false, "format": false},
}

func TestParse(t *testing.T) {
	src := `# a team's settings
flags:
  fail-on: warning
diff:
  adapter: [exported=torchtitan-hf, published=hf]
  values: true
  atol: 1e-3
validate:
  --hashes: yes
baseline:
  - code: dtype_mismatch
    key: "model.layers.*"
    reason: torchtitan exports F32
  - code: missing_file
    file: "*/special_tokens_map.json"
    side: exported
    reason: |
      transformers v5 does not write it
`
	f, err := Parse("x.yaml", []byte(src), schema)
	if err != nil {
		t.Fatal(err)
	}
	has := func(string) bool { return true }
	d := f.Defaults("diff", has)
	if !slices.Equal(d["adapter"], []string{"exported=torchtitan-hf", "published=hf"}) || d["values"][0] != "true" || d["atol"][0] != "1e-3" || d["fail-on"][0] != "warning" {
		t.Errorf("diff defaults %v", d)
	}
	if v := f.Defaults("validate", func(n string) bool { return n != "fail-on" }); len(v) != 1 || v["hashes"][0] != "yes" {
		t.Errorf("validate defaults %v", v)
	}
	if len(f.Baseline.Accepted) != 2 || f.Baseline.Source != "x.yaml" {
		t.Fatalf("baseline %+v", f.Baseline)
	}
	a := f.Baseline.Accepted[1]
	if a.Code != verify.CodeMissingFile || a.Side != verify.Exported || a.Reason != "transformers v5 does not write it" || a.File != "*/special_tokens_map.json" {
		t.Errorf("%+v", a)
	}
	// Empty files and empty sections are no settings.
	for _, s := range []string{"", "# nothing\n", "baseline:\nflags:\n"} {
		if _, err := Parse("x.yaml", []byte(s), schema); err != nil {
			t.Errorf("%q: %v", s, err)
		}
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"diff:\n  valeus: true\n", `x.yaml:2: diff: unknown flag "valeus"`},
		{"validate:\n  values: true\n", "x.yaml:2: validate: the validate command has no --values flag"},
		{"merge:\n  x: 1\n", `x.yaml:1: unknown section "merge" (want flags, baseline, or a command: diff, validate)`},
		{"flags:\n  nope: 1\n", `unknown flag "nope"`},
		{"diff:\n  values: [true, false]\n", "--values takes one value, not a list"},
		{"diff:\n  values:\n", "--values has no value"},
		{"diff:\n  config: other.yaml\n", "--config cannot be set"},
		{"diff:\n  values: true\ndiff:\n  values: false\n", `x.yaml:3: "diff" is given twice`},
		{"baseline:\n  - code: dtype_mismatch\n", "x.yaml:2: baseline[0]: accepting dtype_mismatch needs a reason"},
		{"baseline:\n  - code: no_such\n    reason: r\n", `unknown finding code "no_such"`},
		{"baseline:\n  - code: dtype_mismatch\n    reason: r\n    keys: x\n", `x.yaml:4: baseline[0]: unknown key "keys"`},
		{"baseline:\n  - reason: r\n", "baseline[0]: no code"},
		{"baseline:\n  code: x\n", "baseline: want a list"},
		{"baseline:\n  - code: dtype_mismatch\n    reason: r\n    side: left\n", `side "left"`},
		{"- just\n- a list\n", "x.yaml:1: the file must be a mapping"},
		{"diff: &a\n  values: true\nvalidate: *a\n", "x.yaml:1: anchors (&) are not supported"},
		{"a: b\n---\nc: d\n", "more than one YAML document"},
		{"diff: [\n", "x.yaml:"},
	}
	for _, tt := range tests {
		_, err := Parse("x.yaml", []byte(tt.in), schema)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: %v, want %q", tt.in, err, tt.want)
		}
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, FileName)
	os.WriteFile(p, []byte("flags:\n  fail-on: info\n"), 0o644)
	f, err := Load(p, schema)
	if err != nil || f.Flags[""]["fail-on"][0] != "info" {
		t.Errorf("%+v, %v", f, err)
	}
	if _, err := Load(filepath.Join(dir, "absent.yaml"), schema); err == nil || !strings.Contains(err.Error(), "absent.yaml: no such file") {
		t.Errorf("absent: %v", err)
	}
	big := filepath.Join(dir, "big.yaml")
	os.WriteFile(big, make([]byte, Limit.Max+1), 0o644)
	if _, err := Load(big, schema); err == nil || !strings.Contains(err.Error(), "--config "+big+": file is larger than 1 MiB") {
		t.Errorf("big: %v", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("flags:\n  fail-on: warning\ndiff:\n  adapter: [a, b]\nbaseline:\n  - code: dtype_mismatch\n    key: '*'\n    reason: r\n"))
	f.Add([]byte("diff: &x {values: true}\nvalidate: *x\n"))
	f.Add([]byte("- [a, {b: c}]\n"))
	f.Add([]byte("baseline: [{code: missing_key, reason: r, side: exported}]"))
	f.Fuzz(func(t *testing.T, b []byte) {
		cfg, err := Parse("fuzz.yaml", b, schema)
		if err != nil {
			if cfg != nil {
				t.Fatal("a file with an error")
			}
			if !strings.HasPrefix(err.Error(), "fuzz.yaml") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		for section, flags := range cfg.Flags {
			for name, vals := range flags {
				if _, ok := schema[section]; !ok && section != "" {
					t.Fatalf("section %q accepted", section)
				}
				if len(vals) == 0 || name == "config" {
					t.Fatalf("flag %q: %v", name, vals)
				}
			}
		}
		for _, a := range cfg.Baseline.Accepted {
			if a.Reason == "" {
				t.Fatal("an entry without a reason")
			}
			if _, ok := verify.DocOf(a.Code); !ok {
				t.Fatalf("unknown code %q accepted", a.Code)
			}
		}
	})
}
