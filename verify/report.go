package verify

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// Schema names the JSON report format; renaming or removing a field makes a
// new version.
const Schema = "ckptcheck.report/v1"

// A Report is the outcome of one command: its inputs as resolved and what
// was found. Printing it (WriteText, WriteJSON) is separate from deciding it.
type Report struct {
	Schema   string    `json:"schema"`
	Command  string    `json:"command"`
	OK       bool      `json:"ok"`
	FailOn   Severity  `json:"fail_on"`
	Inputs   []Input   `json:"inputs"`
	Summary  Summary   `json:"summary"`
	Findings []Finding `json:"findings"`
}

// An Input is one checkpoint a command read.
type Input struct {
	Side    string   `json:"side,omitempty"`
	Path    string   `json:"path"`
	Index   string   `json:"index,omitempty"`
	Config  string   `json:"config,omitempty"`
	Files   []string `json:"files"`
	Tensors int      `json:"tensors"`
	Adapter string   `json:"adapter,omitempty"`
}

// Summary counts findings per severity.
type Summary struct {
	Error   int `json:"error"`
	Warning int `json:"warning"`
	Info    int `json:"info"`
}

// NewReport builds a report and decides OK: no finding at or above failOn.
func NewReport(command string, failOn Severity, inputs []Input, findings []Finding) *Report {
	r := &Report{Schema: Schema, Command: command, FailOn: failOn, Inputs: inputs, Findings: findings, OK: true}
	if r.Findings == nil {
		r.Findings = []Finding{}
	}
	for _, f := range findings {
		switch f.Severity {
		case Error:
			r.Summary.Error++
		case Warning:
			r.Summary.Warning++
		default:
			r.Summary.Info++
		}
		if f.Severity >= failOn {
			r.OK = false
		}
	}
	return r
}

// WriteJSON writes the report as one indented JSON document.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// Verdict is the report's first line: "OK" or "FAIL: 2 errors, 1 warning",
// with the counts below the threshold in parentheses after OK.
func (r *Report) Verdict() string {
	var parts []string
	for _, c := range []struct {
		n    int
		name string
	}{{r.Summary.Error, "error"}, {r.Summary.Warning, "warning"}, {r.Summary.Info, "info"}} {
		if c.n > 0 {
			parts = append(parts, plural(c.n, c.name))
		}
	}
	counts := strings.Join(parts, ", ")
	switch {
	case !r.OK:
		return "FAIL: " + counts
	case counts != "":
		return "OK (" + counts + ")"
	}
	return "OK"
}

// WriteText writes the verdict, then the findings grouped by code, most
// severe first. Findings that differ only in a layer index are collapsed
// unless verbose is set.
func (r *Report) WriteText(w io.Writer, verbose bool) error {
	var b strings.Builder
	b.WriteString(r.Verdict())
	b.WriteByte('\n')
	for _, in := range r.Inputs {
		b.WriteString("  ")
		if in.Side != "" {
			b.WriteString(in.Side + ": ")
		}
		fmt.Fprintf(&b, "%s (%s, %s", quoteName(in.Path), plural(len(in.Files), "file"), plural(in.Tensors, "tensor"))
		if in.Adapter != "" {
			b.WriteString(", adapter " + in.Adapter)
		}
		b.WriteString(")\n")
	}
	for _, g := range groupByCode(r.Findings) {
		fmt.Fprintf(&b, "\n%s %s (%d)\n", g[0].Severity, g[0].Code, len(g))
		for _, line := range renderGroup(g, verbose) {
			b.WriteString("  " + line + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// groupByCode groups findings by code, keeping the first appearance order
// within a severity and putting errors first.
func groupByCode(findings []Finding) [][]Finding {
	var order []string
	groups := make(map[string][]Finding)
	for _, f := range findings {
		if _, ok := groups[f.Code]; !ok {
			order = append(order, f.Code)
		}
		groups[f.Code] = append(groups[f.Code], f)
	}
	out := make([][]Finding, 0, len(order))
	for _, c := range order {
		out = append(out, groups[c])
	}
	slices.SortStableFunc(out, func(a, b []Finding) int { return int(b[0].Severity) - int(a[0].Severity) })
	return out
}

func renderGroup(g []Finding, verbose bool) []string {
	var lines []string
	for _, f := range g {
		var where []string
		if f.Side != "" {
			where = append(where, f.Side)
		}
		if f.File != "" {
			where = append(where, quoteName(f.File))
		}
		if f.Key != "" {
			where = append(where, quoteName(f.Key))
		}
		line := quoteName(f.Message)
		if len(where) > 0 {
			line = strings.Join(where, " ") + ": " + line
		}
		lines = append(lines, line)
	}
	return lines
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if strings.HasSuffix(noun, "s") {
		return strconv.Itoa(n) + " " + noun + "es"
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// quoteName escapes a name that holds control or non-printing characters,
// so that a hostile tensor name cannot rewrite the terminal.
func quoteName(s string) string {
	for _, r := range s {
		if !unicode.IsPrint(r) || r == unicode.ReplacementChar {
			q := strconv.QuoteToGraphic(s)
			return q[1 : len(q)-1]
		}
	}
	return s
}
