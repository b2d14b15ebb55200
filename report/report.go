package report

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/ckptcheck/ckptcheck/verify"
)

// Options tune a renderer.
type Options struct {
	// Verbose lists every finding instead of collapsing repeats.
	Verbose bool
	// Depth is how many levels of inspect's module tree to show; 0 is all.
	Depth int

	// Clock stamps JUnit reports; nil is time.Now. Hostname names the
	// machine in them; "" is "localhost". Tests set both for stable output.
	Clock    func() time.Time
	Hostname string
	// Version is the tool's version, for SARIF and HTML reports.
	Version string
	// StepSummary, when set, receives the markdown summary of the github
	// format (the command line opens $GITHUB_STEP_SUMMARY for appending).
	StepSummary io.Writer
	// CommandsToken is the github format's stop-commands token, which
	// keeps names in the log from being read as workflow commands; "" is
	// a random one. Tests set it for stable output.
	CommandsToken string
}

// A Renderer writes a report in one format.
type Renderer func(w io.Writer, r *verify.Report, opt Options) error

var renderers = map[string]Renderer{
	"text":     Text,
	"json":     func(w io.Writer, r *verify.Report, _ Options) error { return r.WriteJSON(w) },
	"github":   GitHub,
	"markdown": Markdown,
	"junit":    JUnit,
	"sarif":    SARIF,
	"html":     HTML,
}

// Formats lists the format names Write accepts.
func Formats() []string {
	names := make([]string, 0, len(renderers))
	for n := range renderers {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Write renders r in the named format.
func Write(w io.Writer, format string, r *verify.Report, opt Options) error {
	render, ok := renderers[format]
	if !ok {
		return fmt.Errorf("unknown format %q (want %s)", format, strings.Join(Formats(), ", "))
	}
	return render(w, r, opt)
}

// Verdict is a report's first line: "OK", "OK (2 warnings)" or
// "FAIL: 2 errors, 1 warning". Errors that do not fail the run (--fail-on
// never) are never called OK.
func Verdict(r *verify.Report) string {
	counts := counts(r.Summary)
	switch {
	case !r.OK:
		return "FAIL: " + counts
	case r.Summary.Error > 0:
		return "ERRORS: " + counts + " (not failing: --fail-on " + r.FailOn.String() + ")"
	case counts != "":
		return "OK (" + counts + ")"
	}
	return "OK"
}

func counts(s verify.Summary) string {
	var parts []string
	for _, c := range []struct {
		n    int
		name string
	}{{s.Error, "error"}, {s.Warning, "warning"}, {s.Info, "info"}} {
		if c.n > 0 {
			parts = append(parts, plural(c.n, c.name))
		}
	}
	if s.Ignored > 0 {
		parts = append(parts, fmt.Sprintf("%d ignored", s.Ignored))
	}
	if s.Suppressed > 0 {
		parts = append(parts, fmt.Sprintf("%d suppressed", s.Suppressed))
	}
	return strings.Join(parts, ", ")
}
