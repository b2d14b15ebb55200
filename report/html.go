package report

import (
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"io"
	"math"
	"strings"
	"sync"

	"github.com/ckptcheck/ckptcheck/verify"
)

var (
	//go:embed page/page.tmpl
	pageTemplate string
	//go:embed page/page.css
	pageCSS string
	//go:embed page/page.js
	pageJS string
)

// maxHTMLFindings bounds the findings the HTML page lists one by one; the
// collapsed lines above the list cover them all.
const maxHTMLFindings = 10_000

// scriptHash stands in the page's Content-Security-Policy for the hash of
// its script, which is known once the template has written it (the
// template drops the script's comments).
const scriptHash = "SCRIPTHASH"

// pageCSP lets the page load nothing at all: no network, no fonts, no
// script but its own.
const pageCSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src 'sha256-" + scriptHash +
	"'; base-uri 'none'; form-action 'none'"

// page is the HTML template, with its style and script inlined, parsed
// when a page is first written: parsing it costs a third of a millisecond
// and a thousand allocations, which every other run of the binary would
// pay at start-up.
var page = sync.OnceValue(func() *template.Template {
	text := strings.Replace(strings.Replace(pageTemplate, "[[CSS]]", pageCSS, 1), "[[JS]]", pageJS, 1)
	return template.Must(template.New("page").Funcs(template.FuncMap{
		"cellStyle": func(color string) template.CSS { return template.CSS("background:" + cssColor(color)) },
		"relText":   func(f verify.Float) string { return fmt.Sprintf("%.6g", float64(f)) },
		"plural":    func(n int, noun string) string { return plural(n, noun) },
		// breakable splits a column name after its '_' and '.', where
		// the header may wrap.
		"breakable": func(s string) []string {
			var parts []string
			for s != "" {
				i := strings.IndexAny(s, "_.") + 1
				if i == 0 {
					i = len(s)
				}
				parts, s = append(parts, s[:i]), s[i:]
			}
			return parts
		},
	}).Parse(text))
})

// cssColor passes a colour of ours (#rrggbb) and nothing else.
func cssColor(c string) string {
	if len(c) != 7 || c[0] != '#' || strings.Trim(c[1:], "0123456789abcdef") != "" {
		return "transparent"
	}
	return c
}

// HTML writes a report as one self-contained page: the verdict, the inputs
// and adapters, a summary per code, the findings collapsed and in full,
// and, for diff --values, a heatmap of the relative L2 change per tensor —
// layers as rows, tensor kinds as columns (experts aggregated), the
// embedding and the head on rows of their own — on a log colour scale, with
// missing, mismatched, re-initialized and non-finite tensors in colours of
// their own and the numbers on hover. The page loads nothing (its
// Content-Security-Policy forbids it), works without its script, and
// prints: details open, colours kept, the tooltip hidden.
func HTML(w io.Writer, r *verify.Report, opt Options) error {
	type input struct {
		Side, Path, Commit, Index, Config, Adapter string
		Files, Tensors                             int
	}
	type codeRow struct {
		Severity, Code, Doc string
		Count               int
	}
	type group struct {
		Severity, Code string
		Count          int
		Lines          []string
	}
	type finding struct{ Severity, Code, Side, Where, Message string }
	type top struct{ Key, RelL2, Cosine, Max, Mismatches string }
	type tick struct {
		Label string
		Left  template.CSS
	}
	type status struct {
		Label, Glyph, Class string
		Style               template.CSS
	}
	p := struct {
		Command, Verdict, VerdictClass, Version, FailOn, CSP, Values string
		// Derived is set under --expect derived: the legend and the
		// caption speak of drift from the published values.
		Derived  bool
		Inputs   []input
		Summary  verify.Summary
		Codes    []codeRow
		Groups   []group
		All      []finding
		AllLeft  int
		Heat     *heatmap
		Top      []top
		Quant    [][]string
		Ticks    []tick
		Statuses []status
		Gradient template.CSS
		Data     any
	}{
		Command: r.Command, Verdict: Verdict(r), Version: opt.Version, FailOn: r.FailOn.String(),
		CSP: pageCSP, Summary: r.Summary, Gradient: template.CSS("background:" + gradient()),
	}
	switch {
	case !r.OK:
		p.VerdictClass = "fail"
	case r.Summary.Error+r.Summary.Warning > 0:
		p.VerdictClass = "warn"
	default:
		p.VerdictClass = "ok"
	}
	for _, in := range r.Inputs {
		side := string(in.Side)
		if side == "" {
			side = "checkpoint"
		}
		row := input{Side: side, Path: quote(in.Path), Index: quote(in.Index), Config: quote(in.Config),
			Adapter: in.Adapter, Files: len(in.Files), Tensors: in.Tensors}
		if in.Hub != nil {
			row.Commit = in.Hub.Commit
		}
		p.Inputs = append(p.Inputs, row)
	}
	for _, g := range groupByCode(r.Findings) {
		doc, _ := verify.DocOf(g[0].Code)
		p.Codes = append(p.Codes, codeRow{Severity: g[0].Severity.String(), Code: string(g[0].Code), Doc: doc.Doc, Count: len(g)})
		p.Groups = append(p.Groups, group{Severity: g[0].Severity.String(), Code: string(g[0].Code), Count: len(g), Lines: renderGroup(g, opt.Verbose)})
		for _, f := range g {
			if len(p.All) == maxHTMLFindings {
				p.AllLeft++
				continue
			}
			var where []string
			if f.File != "" {
				where = append(where, quote(f.File))
			}
			if f.Key != "" {
				where = append(where, quote(f.Key))
			}
			msg := quote(f.Message)
			if f.Physical != "" {
				msg += " (stored as " + quote(f.Physical) + ")"
			}
			p.All = append(p.All, finding{Severity: f.Severity.String(), Code: string(f.Code), Side: string(f.Side),
				Where: strings.Join(where, " "), Message: msg})
		}
	}
	data := map[string]any{"command": r.Command, "ok": r.OK, "verdict": p.Verdict, "summary": r.Summary, "findings": len(r.Findings)}
	if v := r.Values; v != nil {
		p.Values = ValueSummary(v)
		p.Derived = v.Expect.Derived()
		p.Heat = buildHeatmap(r)
		for _, t := range TopChanges(v.Tensors, 10) {
			p.Top = append(p.Top, top{Key: quote(t.Key), RelL2: statText(t.RelL2), Cosine: statText(t.Cosine),
				Max: statText(t.MaxAbsDiff) + " at " + coords(t.MaxAt), Mismatches: thousandsU(t.Mismatches)})
		}
		p.Quant = QuantRows(v.Tensors)
		data["compared"] = v.Compared
		if h := p.Heat; h != nil {
			span := h.LogMax - h.LogMin
			step := max(1, int(math.Ceil(float64(span)/8))) // at most nine labels
			for e := h.LogMin; e <= h.LogMax; e += step {
				p.Ticks = append(p.Ticks, tick{Label: fmt.Sprintf("1e%d", e),
					Left: template.CSS(fmt.Sprintf("left:%.2f%%", 100*float64(e-h.LogMin)/float64(span)))})
			}
			for _, d := range statusDoc {
				if d.status == statusDrift && !p.Derived {
					continue
				}
				class := ""
				if d.status == statusSkipped {
					class = "skipped"
				}
				if darkStatus(d.status) {
					class = "dark"
				}
				p.Statuses = append(p.Statuses, status{Label: d.label, Glyph: d.glyph, Class: class,
					Style: template.CSS("background:" + cssColor(statusColor()[d.status]))})
			}
			data["heatmap"] = h
		}
	}
	p.Data = data
	var b strings.Builder
	if err := page().Execute(&b, p); err != nil {
		return err
	}
	out := b.String()
	i := strings.LastIndex(out, "<script>") + len("<script>")
	j := strings.LastIndex(out, "</script>")
	sum := sha256.Sum256([]byte(out[i:j]))
	out = strings.Replace(out, scriptHash, base64.StdEncoding.EncodeToString(sum[:]), 1)
	_, err := io.WriteString(w, out)
	return err
}
