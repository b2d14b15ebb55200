package report

import (
	"fmt"
	"strings"

	"github.com/ckptcheck/ckptcheck/verify"
)

// writeSuppressed lists the findings a baseline accepted, one line per
// code and reason with a count: they are reported, not hidden, but do not
// count toward the verdict.
func writeSuppressed(b *strings.Builder, r *verify.Report) {
	if len(r.Suppressed) == 0 {
		return
	}
	from := ""
	if r.Baseline != "" {
		from = ", baseline " + quote(r.Baseline)
	}
	fmt.Fprintf(b, "\nsuppressed (%d%s)\n", len(r.Suppressed), from)
	type group struct {
		code   verify.Code
		reason string
	}
	var order []group
	keys := make(map[group][]string)
	for _, s := range r.Suppressed {
		g := group{s.Code, s.Reason}
		if _, ok := keys[g]; !ok {
			order = append(order, g)
		}
		where := s.Key
		if where == "" {
			where = s.File
		}
		keys[g] = append(keys[g], where)
	}
	for _, g := range order {
		ks := keys[g]
		if len(ks) > 1 {
			ks = collapseKeys(ks)
		}
		shown := strings.Join(quoteAll(ks[:min(3, len(ks))]), ", ")
		if len(ks) > 3 {
			shown += fmt.Sprintf(" and %d more", len(ks)-3)
		}
		if shown != "" {
			shown = " " + shown
		}
		fmt.Fprintf(b, "  %s %s%s: %s\n", plural(len(keys[g]), "finding"), g.code, shown, quote(g.reason))
	}
}

func quoteAll(s []string) []string {
	out := make([]string, len(s))
	for i, x := range s {
		out[i] = quote(x)
	}
	return out
}
