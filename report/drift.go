package report

import (
	"strconv"
	"strings"
	"sync"

	"github.com/ckptcheck/ckptcheck/verify"
)

// shortKind abbreviates the widest column names of the drift table.
var shortKind = sync.OnceValue(func() map[string]string {
	return map[string]string{"input_layernorm": "in_norm", "post_attention_layernorm": "post_norm"}
})

// writeDrift writes, under --expect derived, the drift of every layer and
// tensor kind as the heatmap lays them out: the largest relative L2 of
// each cell, or the glyph of a cell that is not a change within the bound.
func writeDrift(b *strings.Builder, r *verify.Report) {
	h := buildHeatmap(r)
	if h == nil {
		return
	}
	b.WriteString("\ndrift per layer (largest relative L2 ‖e − p‖ / ‖p‖; = unchanged, » beyond the drift bound, R re-initialized, ! NaN or Inf, – not compared, × missing)\n")
	header := []string{"layer"}
	for _, c := range h.Columns {
		if s, ok := shortKind()[c]; ok {
			c = s
		}
		header = append(header, c)
	}
	rows := [][]string{header}
	var others []string
	for _, row := range h.Rows {
		if row.Kind != "layer" {
			for _, c := range row.Cells {
				others = append(others, c.Label+" "+driftCell(c))
			}
			continue
		}
		line := []string{row.Label}
		for _, c := range row.Cells {
			line = append(line, driftCell(c))
		}
		rows = append(rows, line)
	}
	if len(rows) > 1 {
		writeColumns(b, rows, "  ")
	}
	if len(others) > 0 {
		b.WriteString("  outside the layers: " + strings.Join(others, ", ") + "\n")
	}
}

// driftCell is a cell of the drift table.
func driftCell(c *heatCell) string {
	switch {
	case c == nil:
		return "·"
	case c.Status == statusChanged:
		return relShort(c.RelL2)
	case c.Status == statusDrift:
		return glyphOf(c.Status) + relShort(c.RelL2)
	}
	return glyphOf(c.Status)
}

// relShort writes a relative L2 in two significant digits.
func relShort(f verify.Float) string {
	if !f.Defined() {
		return "n/a"
	}
	return strconv.FormatFloat(float64(f), 'g', 2, 64)
}
