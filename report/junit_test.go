package report

import (
	"encoding/xml"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/verify"
)

// schemas is the shared folder's schemas, read in place.
const schemas = "../../shared/schemas"

// TestJUnitSchema validates every report against the Ant/Jenkins JUnit
// schema with xmllint, as CI does (.ci/run installs libxml2-utils).
func TestJUnitSchema(t *testing.T) {
	xsd := filepath.Join(schemas, "JUnit.xsd")
	if _, err := os.Stat(xsd); err != nil {
		t.Skipf("%s is absent: %v", xsd, err)
	}
	xmllint, err := exec.LookPath("xmllint")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("xmllint is not installed (apt-get install libxml2-utils); CI must validate JUnit output")
		}
		t.Skip("xmllint is not installed (apt-get install libxml2-utils): JUnit output not validated")
	}
	reports := map[string]*verify.Report{"empty": verify.NewReport("validate", verify.Error, nil, nil)}
	for _, r := range goldenReports {
		reports[r.name] = r.report()
	}
	for name, r := range reports {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), name+".xml")
			if err := os.WriteFile(path, []byte(render(t, "junit", r, goldenOptions)), 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(xmllint, "--noout", "--nonet", "--schema", xsd, path).CombinedOutput()
			if err != nil {
				t.Errorf("xmllint: %v\n%s", err, out)
			}
		})
	}
}

// junitDoc is the part of a JUnit document the tests read.
type junitDoc struct {
	Suites []struct {
		Name     string `xml:"name,attr"`
		Tests    int    `xml:"tests,attr"`
		Failures int    `xml:"failures,attr"`
		Cases    []struct {
			Name    string `xml:"name,attr"`
			Failure *struct {
				Type    string `xml:"type,attr"`
				Message string `xml:"message,attr"`
				Text    string `xml:",chardata"`
			} `xml:"failure"`
		} `xml:"testcase"`
		Out string `xml:"system-out"`
	} `xml:"testsuite"`
}

func readJUnit(t *testing.T, out string) junitDoc {
	t.Helper()
	var doc junitDoc
	if err := xml.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("not XML: %v\n%s", err, out)
	}
	return doc
}

func TestJUnitValidate(t *testing.T) {
	doc := readJUnit(t, render(t, "junit", validateReport(), goldenOptions))
	var names []string
	for _, s := range doc.Suites {
		names = append(names, s.Name)
	}
	if got := strings.Join(names, " "); got != "ckptcheck.validate.format ckptcheck.validate.index ckptcheck.validate.config ckptcheck.validate.files" {
		t.Errorf("suites %s", got)
	}
	for _, s := range doc.Suites {
		cases := map[string]bool{}
		for _, c := range s.Cases {
			cases[c.Name] = c.Failure != nil
		}
		// Every file is a test case of every file family.
		for _, f := range []string{"good/model-00001-of-00002.safetensors", "broken/model-00002-of-00002.safetensors"} {
			if _, ok := cases[f]; !ok {
				t.Errorf("%s has no test case %s", s.Name, f)
			}
		}
		switch s.Name {
		case "ckptcheck.validate.format":
			if !cases["broken/model-00002-of-00002.safetensors"] || cases["good/model-00001-of-00002.safetensors"] || s.Failures != 1 {
				t.Errorf("format: %v", cases)
			}
			if !strings.Contains(s.Out, "broken/model-00001-of-00002.safetensors\n  warning unaligned_data: ") {
				t.Errorf("the warning is not in system-out: %q", s.Out)
			}
		case "ckptcheck.validate.index":
			if !cases["broken/model-00002-of-00002.safetensors"] || s.Failures != 1 || s.Tests != 5 {
				t.Errorf("index: %d tests, %d failures: %v", s.Tests, s.Failures, cases)
			}
		case "ckptcheck.validate.config":
			if s.Failures != 0 || !strings.Contains(s.Out, "broken/config.json\n  warning config_mismatch") {
				t.Errorf("config: %d failures, out %q", s.Failures, s.Out)
			}
		}
	}
}

func TestJUnitDiffMergesFailures(t *testing.T) {
	key := "model.layers.0.mlp.up_proj.weight"
	fs := []verify.Finding{
		{Code: verify.CodeShapeMismatch, Severity: verify.Error, Key: key, Message: "published [4, 2], exported [2, 4] (transposed)"},
		{Code: verify.CodeDTypeMismatch, Severity: verify.Error, Side: verify.Exported, Key: key, Message: "F32, but --dtype demands BF16"},
		{Code: verify.CodeDTypeMismatch, Severity: verify.Warning, Key: "model.norm.weight", Message: "published BF16, exported F32"},
		{Code: verify.CodeValueMismatch, Severity: verify.Error, Key: key, Message: "3 of 8 elements differ"},
		{Code: verify.CodeLowKeyOverlap, Severity: verify.Warning, Message: "only 1 of 4 published keys are in the export"},
	}
	inputs := []verify.Input{{Side: verify.Published, Path: "p"}, {Side: verify.Exported, Path: "e"}}
	r := verify.NewReport("diff", verify.Error, inputs, fs)
	r.Values = &verify.ValueReport{}
	doc := readJUnit(t, render(t, "junit", r, goldenOptions))
	for _, s := range doc.Suites {
		switch s.Name {
		case "ckptcheck.diff.keys":
			if s.Tests != 3 || s.Failures != 1 {
				t.Errorf("keys: %d tests, %d failures; want 3 (two tensors, the diff), 1", s.Tests, s.Failures)
			}
			for _, c := range s.Cases {
				if c.Name == key {
					if c.Failure == nil || c.Failure.Type != "shape_mismatch,dtype_mismatch" || c.Failure.Message != "2 findings: shape_mismatch, dtype_mismatch" ||
						strings.Count(c.Failure.Text, "\n") != 2 {
						t.Errorf("merged failure %+v", c.Failure)
					}
				}
				if c.Name == "p → e" && c.Failure != nil {
					t.Error("a warning is not a failure")
				}
			}
			if !strings.Contains(s.Out, "model.norm.weight\n  warning dtype_mismatch") || !strings.Contains(s.Out, "p → e\n  warning low_key_overlap") {
				t.Errorf("system-out %q", s.Out)
			}
		case "ckptcheck.diff.values":
			if s.Tests != 1 || s.Failures != 1 {
				t.Errorf("values: %d tests, %d failures", s.Tests, s.Failures)
			}
		}
	}
	// --fail-on warning makes warnings failures too.
	r = verify.NewReport("diff", verify.Warning, inputs, fs)
	for _, s := range readJUnit(t, render(t, "junit", r, goldenOptions)).Suites {
		if s.Name == "ckptcheck.diff.keys" && s.Failures != 3 {
			t.Errorf("--fail-on warning: %d failing test cases, want 3", s.Failures)
		}
	}
}

func TestJUnitHostileIsWellFormed(t *testing.T) {
	out := render(t, "junit", hostileReport(), goldenOptions)
	doc := readJUnit(t, out)
	if strings.ContainsAny(out, "\x00\x1b") {
		t.Error("control characters reached the XML")
	}
	failures := 0
	for _, s := range doc.Suites {
		for _, c := range s.Cases {
			if c.Failure != nil {
				failures++
			}
		}
	}
	if failures != 6 { // six names are errors
		t.Errorf("%d failures", failures)
	}
}

func TestJUnitClockAndHost(t *testing.T) {
	out := render(t, "junit", validateReport(), goldenOptions)
	if !strings.Contains(out, `timestamp="2026-03-14T15:09:26" hostname="ci-runner"`) {
		t.Errorf("clock or host not used:\n%.400s", out)
	}
	out = render(t, "junit", validateReport(), Options{})
	if !strings.Contains(out, `hostname="localhost"`) {
		t.Errorf("no hostname must mean localhost:\n%.400s", out)
	}
}

// FuzzJUnitNames checks that any key, file and message makes well-formed
// XML without control characters, the names intact up to escaping.
func FuzzJUnitNames(f *testing.F) {
	for _, s := range hostileNames {
		f.Add(s, s+".safetensors", "m")
	}
	f.Fuzz(func(t *testing.T, key, file, msg string) {
		fs := []verify.Finding{
			{Code: verify.CodeMissingKey, Severity: verify.Error, Key: key, File: file, Message: msg},
			{Code: verify.CodeDuplicateKey, Severity: verify.Warning, Key: key, File: file, Message: msg},
		}
		inputs := []verify.Input{{Side: verify.Published, Path: file, Files: []string{key}}, {Side: verify.Exported, Path: key}}
		var b strings.Builder
		if err := JUnit(&b, verify.NewReport("diff", verify.Error, inputs, fs), goldenOptions); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		d := xml.NewDecoder(strings.NewReader(out))
		for {
			_, err := d.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("not well-formed: %v\n%s", err, out)
			}
		}
		for _, c := range out {
			if c < 0x20 && c != '\n' {
				t.Fatalf("control character %U in the XML", c)
			}
		}
	})
}
