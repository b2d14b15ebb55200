package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/verify"
)

// runnerCommand is a workflow command as the GitHub Actions runner reads a
// line: a port of ActionCommand.TryParseV2 and its unescaping
// (actions/runner, src/Runner.Common/ActionCommand.cs at
// 079cdb1d05fe0ec50f8c51de5a4fa51d0eb189b0).
type runnerCommand struct {
	name  string
	props map[string]string
	data  string
}

func parseRunnerLine(line string) (runnerCommand, bool) {
	msg := strings.TrimLeft(line, " \t\v\f\u00a0\u0085\u2028\u2029")
	if !strings.HasPrefix(msg, "::") {
		return runnerCommand{}, false
	}
	end := strings.Index(msg[2:], "::")
	if end < 0 {
		return runnerCommand{}, false
	}
	info := msg[2 : 2+end]
	c := runnerCommand{name: info, props: map[string]string{}}
	if i := strings.IndexByte(info, ' '); i >= 0 {
		c.name = info[:i]
		for _, p := range strings.Split(strings.TrimSpace(info[i+1:]), ",") {
			k, v, ok := strings.Cut(p, "=")
			if ok && k != "" && v != "" {
				c.props[k] = unescapeRunner(v, true)
			}
		}
	}
	c.data = unescapeRunner(msg[2+end+2:], false)
	return c, true
}

// unescapeRunner undoes the escapes in the runner's order: each mapping
// replaced in turn, %25 last.
func unescapeRunner(s string, property bool) string {
	pairs := []string{"%0D", "\r", "%0A", "\n"}
	if property {
		pairs = append(pairs, "%3A", ":", "%2C", ",")
	}
	pairs = append(pairs, "%25", "%")
	for i := 0; i < len(pairs); i += 2 {
		s = strings.ReplaceAll(s, pairs[i], pairs[i+1])
	}
	return s
}

// runnerLines splits output as the runner does: at LF, CR or CRLF.
func runnerLines(out string) []string {
	return strings.FieldsFunc(strings.ReplaceAll(out, "\r\n", "\n"), func(r rune) bool { return r == '\n' || r == '\r' })
}

func TestGitHubHostileNamesCannotInject(t *testing.T) {
	r := hostileReport()
	for _, opt := range []Options{goldenOptions, {}} { // a fixed token, and a random one
		out := render(t, "github", r, opt)
		stopped := ""
		var annotations []runnerCommand
		for i, line := range runnerLines(out) {
			c, ok := parseRunnerLine(line)
			if stopped != "" {
				if ok && c.name == stopped {
					stopped = ""
				}
				continue
			}
			if i == 0 {
				if ok || strings.Contains(line, "##[") {
					t.Fatalf("the first line must be plain text: %q", line)
				}
				continue
			}
			if !ok {
				t.Fatalf("line %d is not a workflow command, and commands are not stopped: %q", i+1, line)
			}
			switch c.name {
			case "error", "warning", "notice":
				annotations = append(annotations, c)
			case "group", "endgroup":
			case "stop-commands":
				stopped = c.data
				if len(stopped) < 32 {
					t.Fatalf("stop-commands token %q is guessable", stopped)
				}
			default:
				t.Fatalf("line %d is the command %q: %q", i+1, c.name, line)
			}
		}
		if stopped != "" {
			t.Fatal("commands are never resumed")
		}
		// Every annotation reads back as exactly what ckptcheck meant.
		want := map[string]bool{}
		for _, g := range groupByCode(r.Findings) {
			for _, l := range renderGroup(g, false) {
				want[l] = true
			}
		}
		if len(annotations) != len(r.Findings) {
			t.Errorf("%d annotations for %d findings", len(annotations), len(r.Findings))
		}
		for _, a := range annotations {
			if !want[a.data] {
				t.Errorf("annotation %q is not a line of the report", a.data)
			}
			if a.props["title"] != "ckptcheck missing_key" && a.props["title"] != "ckptcheck unexpected_key" {
				t.Errorf("title %q", a.props["title"])
			}
			if f := a.props["file"]; f != "" && !strings.HasPrefix(f, "dir/") {
				t.Errorf("file %q", f)
			}
		}
		// A file name with ',' and ':' survives as a property.
		var files []string
		for _, a := range annotations {
			files = append(files, a.props["file"])
		}
		for _, name := range hostileNames {
			if quote(name) != name {
				continue // control characters: no file property
			}
			found := false
			for _, f := range files {
				found = found || f == "dir/"+name+".safetensors"
			}
			if !found {
				t.Errorf("no annotation has file %q; files %q", "dir/"+name+".safetensors", files)
			}
		}
	}
}

func FuzzGitHubEscape(f *testing.F) {
	for _, s := range append(hostileNames, "", "%", "%%0A", "%250A", "a:b,c") {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, p := escapeData(s), escapeProperty(s)
		if strings.ContainsAny(d, "\r\n") || strings.ContainsAny(p, "\r\n:,") {
			t.Fatalf("escapes leave a line break or separator: %q %q", d, p)
		}
		if got := unescapeRunner(d, false); got != s {
			t.Fatalf("data %q reads back as %q", s, got)
		}
		if got := unescapeRunner(p, true); got != s {
			t.Fatalf("property %q reads back as %q", s, got)
		}
	})
}

func TestGitHubAnnotationLimit(t *testing.T) {
	var fs []verify.Finding
	// 25 error lines (no digits: nothing collapses), the last five of 3
	// findings each; 4 warning lines; 12 info lines.
	for i := range 25 {
		name := "error_" + strings.Repeat("x", i+1)
		n := 1
		if i >= 20 {
			n = 3
		}
		for range n {
			fs = append(fs, verify.Finding{Code: verify.Code("code_" + strings.Repeat("e", i+1)), Severity: verify.Error,
				Key: name, File: "f", Message: "m"})
		}
	}
	for i := range 4 {
		fs = append(fs, verify.Finding{Code: verify.CodeDuplicateKey, Severity: verify.Warning, Key: "w" + strings.Repeat("y", i), Message: "m"})
	}
	for i := range 12 {
		fs = append(fs, verify.Finding{Code: verify.CodeTiedWeight, Severity: verify.Info, Key: "i" + strings.Repeat("z", i), Message: "m"})
	}
	r := verify.NewReport("diff", verify.Error, nil, fs)
	var summary bytes.Buffer
	opt := goldenOptions
	opt.StepSummary = &summary
	out := render(t, "github", r, opt)
	count := map[string]int{}
	var last map[string]string
	for _, line := range runnerLines(out) {
		if c, ok := parseRunnerLine(line); ok {
			count[c.name]++
			if c.name == "error" || c.name == "notice" {
				if last == nil {
					last = map[string]string{}
				}
				last[c.name] = c.data
			}
		}
	}
	if count["error"] != 10 || count["warning"] != 4 || count["notice"] != 10 {
		t.Errorf("annotations per severity %v, want 10 errors, 4 warnings, 10 notices", count)
	}
	// 9 error lines shown, 16 more: 11 of one finding, 5 of three.
	if want := "16 more error lines (26 findings) not annotated: see the step summary"; last["error"] != want {
		t.Errorf("last error annotation %q, want %q", last["error"], want)
	}
	if want := "3 more info lines (3 findings) not annotated: see the step summary"; last["notice"] != want {
		t.Errorf("last notice %q, want %q", last["notice"], want)
	}
	if !strings.Contains(out, "::error title=ckptcheck code_e") || strings.Index(out, "::error") > strings.Index(out, "::warning") ||
		strings.Index(out, "::warning") > strings.Index(out, "::notice") {
		t.Errorf("errors must come first:\n%s", out)
	}
	if !strings.HasPrefix(summary.String(), "### ❌ ckptcheck diff") || summary.Len() > MarkdownLimit {
		t.Errorf("step summary (%d bytes) is not the markdown report:\n%.300s", summary.Len(), summary.String())
	}
}

func TestGitHubNoFindings(t *testing.T) {
	out := render(t, "github", verify.NewReport("validate", verify.Error, nil, nil), goldenOptions)
	if out != "ckptcheck validate: OK\n" {
		t.Errorf("%q", out)
	}
}

func TestClip(t *testing.T) {
	for _, tt := range []struct {
		s    string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"abcdefghij", 5, "ab…"},
		{"ééééé", 6, "é…"}, // never inside a character
	} {
		if got := clip(tt.s, tt.n); got != tt.want || len(got) > tt.n {
			t.Errorf("clip(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
	}
}
