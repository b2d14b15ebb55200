package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/ckptcheck/ckptcheck/verify"
)

// writeValues writes a value comparison's summary line, the tensors that
// changed most, and the tensors skipped with their reasons.
func writeValues(b *strings.Builder, v *verify.ValueReport) {
	b.WriteString("  values: " + ValueSummary(v) + "\n")
	if top := TopChanges(v.Tensors, 10); len(top) > 0 {
		b.WriteString("\nlargest changes (relative L2, max |Δ| at, cosine)\n")
		rows := make([][]string, len(top))
		for i, t := range top {
			rows[i] = []string{quote(t.Key), statText(t.RelL2), statText(t.MaxAbsDiff) + " at " + coords(t.MaxAt), statText(t.Cosine)}
		}
		writeColumns(b, rows, "  ")
	}
	writeQuantValues(b, v)
	var skipped []verify.TensorStats
	for _, t := range v.Tensors {
		if t.Skipped != "" {
			skipped = append(skipped, t)
		}
	}
	if len(skipped) > 0 {
		fmt.Fprintf(b, "\nnot compared (%d)\n", len(skipped))
		byReason := map[string][]string{}
		var reasons []string
		for _, t := range skipped {
			if byReason[t.Skipped] == nil {
				reasons = append(reasons, t.Skipped)
			}
			byReason[t.Skipped] = append(byReason[t.Skipped], t.Key)
		}
		for _, reason := range reasons {
			for _, k := range collapseKeys(byReason[reason]) {
				b.WriteString("  " + quote(k) + ": " + quote(reason) + "\n")
			}
		}
	}
}

// statText writes a statistic, "n/a" where it is undefined.
func statText(f verify.Float) string {
	if !f.Defined() {
		return "n/a"
	}
	return fmtFloat(float64(f))
}

func coords(at []uint64) string {
	if at == nil {
		return "?"
	}
	parts := make([]string, len(at))
	for i, c := range at {
		parts[i] = fmt.Sprint(c)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// TopChanges returns the n compared tensors that changed most, by relative
// L2 (undefined last).
func TopChanges(tensors []verify.TensorStats, n int) []verify.TensorStats {
	var changed []verify.TensorStats
	for _, t := range tensors {
		if t.Skipped == "" && !t.BitIdentical && (t.MaxAbsDiff > 0 || t.Mismatches > 0) {
			changed = append(changed, t)
		}
	}
	slices.SortStableFunc(changed, func(a, b verify.TensorStats) int {
		return cmpNaNLast(float64(b.RelL2), float64(a.RelL2))
	})
	return changed[:min(n, len(changed))]
}

func cmpNaNLast(a, b float64) int {
	switch {
	case math.IsNaN(a) && math.IsNaN(b):
		return 0
	case math.IsNaN(a):
		return -1
	case math.IsNaN(b):
		return 1
	}
	return cmp.Compare(a, b)
}

// ValueSummary is the one-line summary of a value comparison.
func ValueSummary(v *verify.ValueReport) string {
	var parts []string
	within, outside := "within tolerance", "outside tolerance"
	if v.Expect.Derived() {
		within, outside = "within the drift bound", "failed as a fine-tune"
	}
	for _, p := range []struct {
		n    int
		text string
	}{{v.BitIdentical, "bit-identical"}, {v.Equal, "equal values"}, {v.WithinTolerance, within},
		{v.Mismatched, outside}, {v.Skipped, "not compared"}} {
		if p.n > 0 {
			parts = append(parts, fmt.Sprintf("%s %s", thousands(p.n), p.text))
		}
	}
	s := thousands(v.Compared) + " compared"
	if v.Expect.Derived() {
		s += " as a fine-tune (--expect derived)"
	}
	if len(parts) > 0 {
		s += ": " + strings.Join(parts, ", ")
	}
	if top := TopChanges(v.Tensors, 1); len(top) > 0 {
		s += fmt.Sprintf("; largest change %s rel L2 at %s", statText(top[0].RelL2), quote(top[0].Key))
	}
	return s
}
