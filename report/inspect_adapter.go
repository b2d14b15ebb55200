package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/ckptcheck/ckptcheck/verify"
)

// writeAdapter describes a LoRA adapter after an inspection's totals: its
// config, then one row a target.
func writeAdapter(w io.Writer, a *verify.AdapterInspection) error {
	var b strings.Builder
	kind := a.PEFTType
	if kind == "" {
		kind = "LoRA"
	}
	if a.Trainer != "" {
		kind += " (" + a.Trainer + ")"
	}
	fmt.Fprintf(&b, "\nadapter: %s", kind)
	if a.Config != "" {
		fmt.Fprintf(&b, ", config %s", quote(a.Config))
	}
	b.WriteByte('\n')
	if a.BaseModel != "" {
		fmt.Fprintf(&b, "  base model %s (as the config names it; not fetched)\n", quote(a.BaseModel))
	}
	scale := "alpha/r"
	if a.RSLoRA {
		scale = "alpha/√r (rsLoRA)"
	}
	r := "-"
	if a.Rank > 0 {
		r = thousandsU(a.Rank)
	}
	fmt.Fprintf(&b, "  r %s, alpha %s, scale %s, DoRA %s\n", r, fmtFloat(float64(a.Alpha)), scale, yesNo(a.DoRA))
	switch {
	case len(a.TargetModules) > 0:
		fmt.Fprintf(&b, "  target_modules %s\n", strings.Join(quoteAll(a.TargetModules), ", "))
	case a.TargetRegex != "":
		fmt.Fprintf(&b, "  target_modules %s (a regular expression)\n", quote(a.TargetRegex))
	}
	if len(a.ModulesToSave) > 0 || len(a.Saved) > 0 {
		fmt.Fprintf(&b, "  modules_to_save %s; copies held: %s\n", orNone(quoteAll(a.ModulesToSave)), orNone(quoteAll(a.Saved)))
	}
	fmt.Fprintf(&b, "  %s, %s trainable parameters (%s)\n", plural(len(a.Targets), "target"),
		thousandsU(a.TrainableParameters), humanCount(a.TrainableParameters))
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	if len(a.Targets) == 0 {
		return nil
	}
	if _, err := io.WriteString(w, "\n"); err != nil {
		return err
	}
	rows := [][]string{{"TARGET", "RANK", "ALPHA", "SCALE", "OUT×IN", "PARAMETERS", "DORA"}}
	for _, t := range a.Targets {
		shape := "-"
		if t.Out > 0 || t.In > 0 {
			shape = fmt.Sprintf("%d×%d", t.Out, t.In)
		}
		rows = append(rows, []string{quote(t.Module), thousandsU(t.Rank), fmtFloat(float64(t.Alpha)), fmtFloat(float64(t.Scale)),
			shape, thousandsU(t.Parameters), yesNo(t.DoRA)})
	}
	return writeColumns(w, rows, "  ")
}

func yesNo(v bool) string {
	if v {
		return "yes"
	}
	return "no"
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
