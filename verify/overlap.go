package verify

// The low_key_overlap hint: most keys unmatched, and the prefix that
// would explain it.

import (
	"fmt"

	"github.com/ckptcheck/ckptcheck/adapter"
	"github.com/ckptcheck/ckptcheck/internal/textfmt"
)

// overlapHint warns when most published keys have no exported counterpart:
// the usual cause is a naming scheme the adapter does not cover. When a
// prefix on one side explains the difference, the hint says how to remove
// or add it.
func overlapHint(pub, exp *adapter.View, common int) []Finding {
	if len(pub.Tensors) == 0 || len(exp.Tensors) == 0 || 2*common >= len(pub.Tensors) {
		return nil
	}
	msg := fmt.Sprintf("only %s of %s published keys are in the export under adapters %s / %s",
		textfmt.Thousands(common), textfmt.Thousands(len(pub.Tensors)), pub.Adapter, exp.Adapter)
	if prefix, n := commonPrefix(exp, pub); 2*(common+n) >= len(pub.Tensors) {
		msg += fmt.Sprintf("; %s match once the prefix %q is removed from exported names: compare with --strip-prefix %s, and remove it before upload (transformers will not load the names as they are: needs_adapter says so)", textfmt.Plural(n, "more key"), prefix, prefix)
	} else if prefix, n := commonPrefix(pub, exp); 2*(common+n) >= len(pub.Tensors) {
		msg += fmt.Sprintf("; %s match once exported names gain the prefix %q: compare with --rename '^=%s', and add it before upload (transformers will not load the names as they are: needs_adapter says so)", textfmt.Plural(n, "more key"), prefix, prefix)
	} else {
		msg += "; the export may use another naming scheme (see --adapter, --strip-prefix, --rename, ckptcheck adapters)"
	}
	return []Finding{{Code: CodeLowKeyOverlap, Severity: Warning, Message: msg}}
}

// commonPrefix finds the dotted prefix that, removed from names of from,
// makes the most of them names of to: "student." for student.model.norm.weight
// against model.norm.weight. It returns the prefix and how many it matches.
func commonPrefix(from, to *adapter.View) (string, int) {
	counts := map[string]int{}
	for _, t := range from.Tensors {
		if _, ok := to.Tensor(t.Name); ok {
			continue
		}
		for i := 0; i < len(t.Name); i++ {
			if t.Name[i] != '.' {
				continue
			}
			if _, ok := to.Tensor(t.Name[i+1:]); ok {
				counts[t.Name[:i+1]]++
				break
			}
		}
	}
	best, most := "", 0
	for p, n := range counts {
		if n > most || (n == most && p < best) {
			best, most = p, n
		}
	}
	return best, most
}
