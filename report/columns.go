package report

import (
	"bufio"
	"io"
	"strings"

	"github.com/rivo/uniseg"

	"github.com/ckptcheck/ckptcheck/internal/textfmt"
)

// writeColumns writes rows as left-aligned columns two spaces apart, each
// line after indent, aligned by display width (a CJK character or an emoji
// takes two columns). It does what text/tabwriter does for this case at a
// fraction of the cost, which matters for 18,000-row listings.
func writeColumns(w io.Writer, rows [][]string, indent string) error {
	var widths []int
	cellWidth := make([][]int, len(rows))
	for i, r := range rows {
		cellWidth[i] = make([]int, len(r))
		for j, cell := range r {
			if j == len(widths) {
				widths = append(widths, 0)
			}
			cellWidth[i][j] = width(cell)
			widths[j] = max(widths[j], cellWidth[i][j])
		}
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	for i, r := range rows {
		bw.WriteString(indent)
		for j, cell := range r {
			bw.WriteString(cell)
			if j < len(r)-1 {
				bw.WriteString(strings.Repeat(" ", widths[j]-cellWidth[i][j]+2))
			}
		}
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// width is a string's display width; ASCII, the common case, is its length.
func width(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return uniseg.StringWidth(s)
		}
	}
	return len(s)
}

var (
	quote      = textfmt.Quote
	fmtFloat   = textfmt.Float
	thousands  = textfmt.Thousands[int]
	thousandsU = textfmt.Thousands[uint64]
)

func plural(n int, noun string) string { return textfmt.Plural(n, noun) }

// Table writes rows as aligned columns under an optional header row, for
// the listings that are not reports (adapters, codes).
func Table(w io.Writer, header []string, rows [][]string) error {
	if header != nil {
		rows = append([][]string{header}, rows...)
	}
	return writeColumns(w, rows, "")
}
