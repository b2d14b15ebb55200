package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/ckptcheck/ckptcheck/verify"
)

// MarkdownLimit is the most bytes Markdown writes, whatever the number of
// findings: GitHub refuses PR comments over 65,536 characters and drops
// step summaries over 1 MiB.
const MarkdownLimit = 60_000

// mdReserve is kept free for the headings and the closing lines that count
// what was left out, which are written whatever the budget.
const mdReserve = 2000

// Markdown writes a report for a GitHub step summary or a pull-request
// comment: the verdict, the inputs, a table of findings per code, the value
// comparison, the findings collapsed as in the text format, and the full
// list in a details block. It never writes more than MarkdownLimit bytes:
// what does not fit is left out and counted. Names are written in code
// spans, so nothing from a file is read as Markdown, HTML or a mention.
func Markdown(w io.Writer, r *verify.Report, opt Options) error {
	b := &mdBudget{limit: MarkdownLimit - mdReserve}
	icon := "✅"
	if !r.OK {
		icon = "❌"
	} else if r.Summary.Error+r.Summary.Warning > 0 {
		icon = "⚠️"
	}
	b.must(fmt.Sprintf("### %s ckptcheck %s: %s\n\n", icon, r.Command, mdEscape(Verdict(r))))

	if len(r.Inputs) > 0 {
		b.must("| input | path | files | tensors | adapter |\n|---|---|---:|---:|---|\n")
		left := 0
		for _, in := range r.Inputs {
			side := string(in.Side)
			if side == "" {
				side = "checkpoint"
			}
			path := in.Path
			if in.Hub != nil {
				path += " @ " + in.Hub.Commit
			}
			row := fmt.Sprintf("| %s | %s | %d | %s | %s |\n", side, mdCode(path, true), len(in.Files), thousands(in.Tensors), mdCode(in.Adapter, true))
			if b.Len() > b.limit/4 || !b.add(row) { // inputs take at most a quarter
				left++
			}
		}
		if left > 0 {
			b.must(fmt.Sprintf("| … | %s left out | | | |\n", plural(left, "input")))
		}
		b.must("\n")
	}

	groups := groupByCode(r.Findings)
	if len(groups) > 0 {
		b.must("| severity | code | findings |\n|---|---|---:|\n")
		for _, g := range groups {
			b.add(fmt.Sprintf("| %s | `%s` | %s |\n", g[0].Severity, g[0].Code, thousands(len(g))))
		}
		b.must("\n")
	}

	if v := r.Values; v != nil {
		b.add("**Values:** " + mdCode(ValueSummary(v), false) + "\n\n")
		if top := TopChanges(v.Tensors, 10); len(top) > 0 {
			b.add("| largest changes | relative L2 | max \\|Δ\\| at | cosine |\n|---|---:|---|---:|\n")
			for _, t := range top {
				b.add(fmt.Sprintf("| %s | %s | %s at %s | %s |\n", mdCode(t.Key, true), statText(t.RelL2), statText(t.MaxAbsDiff), coords(t.MaxAt), statText(t.Cosine)))
			}
			b.add("\n")
		}
	}

	if len(groups) == 0 {
		_, err := io.WriteString(w, b.String())
		return err
	}
	b.must("#### Findings\n\n")
	linesLeft, linesAll := 0, 0
	for _, g := range groups {
		lines := renderGroup(g, opt.Verbose)
		linesAll += len(lines)
		if !b.add(fmt.Sprintf("**%s** `%s` (%s)\n\n", g[0].Severity, g[0].Code, thousands(len(g)))) {
			linesLeft += len(lines)
			continue
		}
		for _, l := range lines {
			if !b.add("- " + mdCode(l, false) + "\n") {
				linesLeft++
			}
		}
		b.add("\n")
	}

	b.must(fmt.Sprintf("<details><summary>All %s</summary>\n\n", plural(len(r.Findings), "finding")))
	listed := 0
	for _, g := range groups {
		for _, f := range g {
			if !b.add(fmt.Sprintf("- %s `%s` %s\n", f.Severity, f.Code, mdCode(findingLine(*f, f.Key), false))) {
				break
			}
			listed++
		}
	}
	b.limit = MarkdownLimit // the reserve is for what follows
	if left := len(r.Findings) - listed; left > 0 {
		b.must(fmt.Sprintf("\n_%s of %s left out of this list to keep it under %s bytes; `--format json` lists every one._\n",
			plural(left, "finding"), thousands(len(r.Findings)), thousands(MarkdownLimit)))
	}
	b.must("\n</details>\n")
	if linesLeft > 0 {
		b.must(fmt.Sprintf("\n_%s of %s left out of the findings above._\n", plural(linesLeft, "line"), thousands(linesAll)))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// mdBudget is a string builder that refuses what would pass its limit.
type mdBudget struct {
	strings.Builder
	limit int
}

// add appends s if it fits, and says whether it did.
func (b *mdBudget) add(s string) bool {
	if b.Len()+len(s) > b.limit {
		return false
	}
	b.WriteString(s)
	return true
}

// must appends s, which is short and comes out of the reserve.
func (b *mdBudget) must(s string) { b.WriteString(s) }

// mdCode writes s as a Markdown code span: control characters escaped, at
// most maxLine bytes, fenced by more backticks than it holds in a row, and
// in a table cell with '|' escaped (GFM splits cells before it reads code
// spans). Inside a code span nothing is Markdown, HTML, a link or a mention.
func mdCode(s string, cell bool) string {
	if s == "" {
		return ""
	}
	s = clip(quote(s), maxLine)
	run, longest := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	if cell {
		s = strings.ReplaceAll(s, "|", `\|`)
	}
	fence := strings.Repeat("`", longest+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") || (strings.HasPrefix(s, " ") && strings.HasSuffix(s, " ")) {
		s = " " + s + " "
	}
	return fence + s + fence
}

// mdEscape escapes the Markdown punctuation of a line of ckptcheck's own
// text (a verdict), which holds no names.
func mdEscape(s string) string {
	var b strings.Builder
	for _, c := range s {
		if strings.ContainsRune("\\`*_{}[]()#+-.!|<>&~", c) {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}
