package report

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/ckptcheck/ckptcheck/safetensors"
	"github.com/ckptcheck/ckptcheck/verify"
)

// writeInspections writes the report's inspection, or each of a folder's
// checkpoints under a line naming it.
func writeInspections(w io.Writer, r *verify.Report, depth int) error {
	if r.Inspection != nil {
		return writeInspection(w, r.Inspection, depth)
	}
	for i, v := range r.Inspections {
		sep := ""
		if i > 0 {
			sep = "\n"
		}
		if _, err := fmt.Fprintf(w, "%s== %s [variant %s]\n", sep, quote(v.Path), quote(v.Variant)); err != nil {
			return err
		}
		if err := writeInspection(w, v.Inspection, depth); err != nil {
			return err
		}
	}
	return nil
}

// writeInspection lists an inspection's tensors (or its module tree), then
// the totals.
func writeInspection(w io.Writer, ins *verify.Inspection, depth int) error {
	if ins.Tree != nil {
		var rows [][]string
		treeRows(&rows, ins.Tree, "", depth)
		if err := writeColumns(w, append([][]string{{"MODULE", "PARAMETERS", "TENSORS"}}, rows...), ""); err != nil {
			return err
		}
	} else if len(ins.Tensors) > 0 {
		rows := make([][]string, 0, len(ins.Tensors)+1)
		rows = append(rows, []string{"NAME", "DTYPE", "SHAPE", "PARAMETERS", "BYTES", "FILE"})
		for _, t := range ins.Tensors {
			rows = append(rows, []string{quote(t.Name), t.Type(), safetensors.FormatShape(t.Shape),
				thousandsU(t.Parameters), humanBytes(t.Bytes), quote(t.File)})
		}
		if err := writeColumns(w, rows, ""); err != nil {
			return err
		}
	}
	tot := ins.Totals
	var b strings.Builder
	if ins.Filter != "" && tot.Tensors == 0 {
		fmt.Fprintf(&b, "no tensor matches --filter %s\n", quote(ins.Filter))
	}
	if ins.Tree != nil || len(ins.Tensors) > 0 {
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "%s, %s parameters (%s), %s in %s\n", plural(tot.Tensors, "tensor"),
		thousandsU(tot.Parameters), humanCount(tot.Parameters), humanBytes(tot.Bytes), plural(tot.Files, "file"))
	var rows [][]string
	for _, name := range slices.Sorted(maps.Keys(tot.ByDType)) {
		d := tot.ByDType[name]
		rows = append(rows, []string{name, plural(d.Tensors, "tensor"), humanCount(d.Parameters) + " parameters", humanBytes(d.Bytes)})
	}
	for _, k := range slices.Sorted(maps.Keys(tot.Metadata)) {
		rows = append(rows, []string{"metadata", quote(k) + " = " + quote(tot.Metadata[k])})
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	if err := writeColumns(w, rows, "  "); err != nil || ins.Adapter == nil {
		return err
	}
	return writeAdapter(w, ins.Adapter)
}

// treeRows lists the modules below n. Tensors themselves (the leaves:
// "weight", "bias") are left out below the top level; their module's line
// already counts them.
func treeRows(rows *[][]string, n *verify.TreeNode, indent string, depth int) {
	for _, c := range n.Children {
		if len(c.Children) == 0 && indent != "" {
			continue
		}
		*rows = append(*rows, []string{indent + quote(c.Name), humanCount(c.Parameters), plural(c.Tensors, "tensor")})
		if depth != 1 {
			treeRows(rows, c, indent+"  ", max(depth-1, 0))
		}
	}
}

// humanCount writes parameter counts as Hugging Face does: 4.02B, 151.94M.
func humanCount(n uint64) string {
	return humanUnits(float64(n), "", []string{"", "K", "M", "B", "T"})
}

// humanBytes writes decimal byte sizes: 8.04 GB.
func humanBytes(n uint64) string {
	return humanUnits(float64(n), " ", []string{"B", "KB", "MB", "GB", "TB", "PB"})
}

func humanUnits(v float64, sep string, units []string) string {
	i := 0
	for v >= 1000 && i < len(units)-1 {
		v /= 1000
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%.0f%s%s", v, sep, units[0])
	}
	return fmt.Sprintf("%.2f%s%s", v, sep, units[i])
}
