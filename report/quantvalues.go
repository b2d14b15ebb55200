package report

import (
	"fmt"
	"strings"

	"github.com/ckptcheck/ckptcheck/verify"
)

// QuantRows is the quantization error of each quantized weight compared
// through its codec, in the report's order: weight, encoding, relative L2,
// the bound it was judged by, the worst element in half steps, verdict.
func QuantRows(tensors []verify.TensorStats) [][]string {
	var rows [][]string
	for _, t := range tensors {
		q := t.Quantization
		if q == nil || t.Skipped != "" {
			continue
		}
		bound := "no bound (the codec states no steps)"
		switch q.Bound {
		case "elementwise":
			bound = "½ step an element, noise " + statText(q.NoiseRelL2)
		case "statistical":
			bound = "rel L2 ≤ " + statText(q.RelL2Bound)
		}
		verdict := "within"
		if !q.Within && q.Bound != "none" {
			verdict = "outside"
			if q.Outside > 0 {
				verdict += fmt.Sprintf(" (%s elements)", thousandsU(q.Outside))
			}
		}
		rows = append(rows, []string{quote(t.Key), quote(t.Encoding), statText(t.RelL2), bound, statText(q.MaxStepRatio), verdict})
	}
	return rows
}

// writeQuantValues writes the quantization error per layer.
func writeQuantValues(b *strings.Builder, v *verify.ValueReport) {
	rows := QuantRows(v.Tensors)
	if len(rows) == 0 {
		return
	}
	b.WriteString("\nquantization error (relative L2, bound, worst in half steps, verdict)\n")
	writeColumns(b, rows, "  ")
}
