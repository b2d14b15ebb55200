package report

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"strings"

	"github.com/ckptcheck/ckptcheck/verify"
)

// maxAnnotations is how many annotations of one severity GitHub shows for
// a step; it drops the rest (and keeps at most 50 per job).
const maxAnnotations = 10

// maxLine bounds one finding line in the github and markdown formats: a
// tensor name may be as long as a header allows.
const maxLine = 1000

// GitHub writes a report as GitHub Actions workflow commands: the verdict,
// then one ::error, ::warning or ::notice annotation per collapsed finding
// line, errors first, at most ten per severity (GitHub shows no more), the
// tenth saying how many more there are; then the whole text report inside a
// collapsed log group. With opt.StepSummary set, the markdown summary goes
// there.
//
// Every name comes from a file and may be hostile. Annotation data and
// properties are escaped as the runner unescapes them (%, CR and LF; ':' and
// ',' too in properties), so each annotation is one line that the runner
// parses as that command and nothing else; the text report is printed
// between ::stop-commands:: and its random token, so that no line of it is
// ever read as a command.
func GitHub(w io.Writer, r *verify.Report, opt Options) error {
	var b strings.Builder
	fmt.Fprintf(&b, "ckptcheck %s: %s\n", r.Command, Verdict(r))
	var bySeverity [verify.Never][]struct {
		groupLine
		code verify.Code
	}
	for _, g := range groupByCode(r.Findings) {
		sev := g[0].Severity
		if sev < verify.Info || sev > verify.Error {
			continue
		}
		for _, l := range collapseGroup(g, opt.Verbose) {
			bySeverity[sev] = append(bySeverity[sev], struct {
				groupLine
				code verify.Code
			}{l, g[0].Code})
		}
	}
	where := "the step summary"
	if opt.StepSummary == nil {
		where = "the log group \"all findings\""
	}
	for sev := verify.Error; sev >= verify.Info; sev-- {
		lines := bySeverity[sev]
		shown := lines
		if len(lines) > maxAnnotations {
			shown = lines[:maxAnnotations-1]
		}
		for _, l := range shown {
			props := "title=" + escapeProperty("ckptcheck "+string(l.code))
			// A file the annotation can point at; a name with control
			// characters is in the message only, escaped.
			if l.file != "" && quote(l.file) == l.file {
				props += ",file=" + escapeProperty(l.file)
			}
			fmt.Fprintf(&b, "::%s %s::%s\n", annotation(sev), props, escapeData(clip(l.text, maxLine)))
		}
		if rest := lines[len(shown):]; len(rest) > 0 {
			findings := 0
			for _, l := range rest {
				findings += l.count
			}
			msg := fmt.Sprintf("%s (%s) not annotated: see %s", plural(len(rest), "more "+sev.String()+" line"), plural(findings, "finding"), where)
			fmt.Fprintf(&b, "::%s title=%s::%s\n", annotation(sev), escapeProperty("ckptcheck: more findings"), escapeData(msg))
		}
	}
	if len(r.Findings) > 0 {
		token := opt.CommandsToken
		if token == "" {
			var t [16]byte
			rand.Read(t[:])
			token = hex.EncodeToString(t[:])
		}
		var text strings.Builder
		if err := Text(&text, r, opt); err != nil {
			return err
		}
		fmt.Fprintf(&b, "::group::%s\n", escapeData(fmt.Sprintf("all findings (%d)", len(r.Findings))))
		fmt.Fprintf(&b, "::stop-commands::%s\n", token)
		b.WriteString(text.String())
		fmt.Fprintf(&b, "::%s::\n::endgroup::\n", token)
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	if opt.StepSummary != nil {
		if err := Markdown(opt.StepSummary, r, opt); err != nil {
			return fmt.Errorf("step summary: %w", err)
		}
	}
	return nil
}

func annotation(sev verify.Severity) string {
	switch sev {
	case verify.Error:
		return "error"
	case verify.Warning:
		return "warning"
	}
	return "notice"
}

// The runner's escapes (actions/runner, src/Runner.Common/ActionCommand.cs,
// _escapeDataMappings and _escapePropertyMappings; the toolkit's
// escapeData and escapeProperty in packages/core/src/command.ts). A
// Replacer makes one pass, so a '%' of the name is escaped and never read
// as the start of an escape.
var (
	dataEscaper     = strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A")
	propertyEscaper = strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C")
)

// escapeData escapes a workflow command's data (what follows "::").
func escapeData(s string) string { return dataEscaper.Replace(s) }

// escapeProperty escapes a workflow command's property value.
func escapeProperty(s string) string { return propertyEscaper.Replace(s) }

// clip cuts s to at most n bytes at a character boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n - len("…")
	for i > 0 && s[i]&0xC0 == 0x80 {
		i--
	}
	return s[:i] + "…"
}
