package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/ckptcheck/ckptcheck/safetensors"
	"github.com/ckptcheck/ckptcheck/verify"
)

// maxExplainedLines bounds the lines an explanation lists per kind.
const maxExplainedLines = 8

// writeExplanation says how one key maps on each side.
func writeExplanation(w io.Writer, ex *verify.Explanation) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", quote(ex.Key))
	if ex.Tied != "" {
		fmt.Fprintf(&b, "  %s\n", ex.Tied)
	}
	for _, es := range ex.Sides {
		fmt.Fprintf(&b, "  %s (adapter %s):", es.Side, es.Adapter)
		if t := es.Logical; t != nil {
			fmt.Fprintf(&b, " %s %s <- %s\n", t.DType, safetensors.FormatShape(t.Shape), quote(t.Source))
			if t.Rule != "" {
				fmt.Fprintf(&b, "    rule %s\n", quote(t.Rule))
			}
			if t.Stored != nil {
				fmt.Fprintf(&b, "    stored transposed as %s: read a tile at a time and transposed\n", safetensors.FormatShape(t.Stored))
			}
			if t.Interleave != nil {
				fmt.Fprintf(&b, "    interleaved: a unit of each source in turn, units of %v bytes\n", t.Interleave)
			}
			for n, s := range t.Segments {
				if n == maxExplainedLines {
					fmt.Fprintf(&b, "    ... more segments (%d listed in JSON)\n", len(t.Segments))
					break
				}
				tile := ""
				if s.Transposed {
					tile = ", a tile stored transposed"
				}
				fmt.Fprintf(&b, "    bytes %d..%d of %s in %s%s\n", s.Offset, s.Offset+s.Length, quote(s.Tensor), quote(s.File), tile)
			}
		} else {
			b.WriteString(" no tensor of that name\n")
		}
		// A stacked tensor maps to one tensor per expert: collapse them.
		var targets, other []string
		for _, f := range es.From {
			if t, ok := strings.CutPrefix(f, "maps to "); ok {
				targets = append(targets, t)
			} else {
				other = append(other, f)
			}
		}
		for _, t := range collapseKeys(targets) {
			fmt.Fprintf(&b, "    the physical %s maps to %s\n", quote(ex.Key), quote(t))
		}
		for _, f := range other {
			fmt.Fprintf(&b, "    the physical %s %s\n", quote(ex.Key), quote(f))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
