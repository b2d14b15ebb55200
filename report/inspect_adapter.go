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
	if a.Layout != "" {
		fmt.Fprintf(&b, "  layout %s%s\n", quote(a.Layout), layoutNames[a.Layout])
	}
	alpha, scale := ", alpha "+fmtFloat(float64(a.Alpha)), "alpha/r"
	switch {
	case a.Layout == "mlx-lm":
		alpha, scale = "", "lora_parameters.scale as is (no alpha/r)"
	case a.RSLoRA:
		scale = "alpha/√r (rsLoRA)"
	}
	r := "-"
	if a.Rank > 0 {
		r = thousandsU(a.Rank)
	}
	fmt.Fprintf(&b, "  r %s%s, scale %s, DoRA %s\n", r, alpha, scale, yesNo(a.DoRA))
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
		alpha := fmtFloat(float64(t.Alpha))
		if a.Layout == "mlx-lm" {
			alpha = "-" // mlx-lm's scale is the config's, not alpha/r
		}
		shape := "-"
		if t.Out > 0 || t.In > 0 {
			shape = fmt.Sprintf("%d×%d", t.Out, t.In)
		}
		rows = append(rows, []string{quote(t.Module), thousandsU(t.Rank), alpha, fmtFloat(float64(t.Scale)),
			shape, thousandsU(t.Parameters), yesNo(t.DoRA)})
	}
	return writeColumns(w, rows, "  ")
}

// layoutNames says how each adapter layout verify reads names and
// orients a target's pair (verify/loralayout.go cites the trainers' code).
var layoutNames = map[string]string{
	"peft":      ": base_model.model.<module>.lora_A.weight [r, in], .lora_B.weight [out, r]",
	"torchtune": ": layers.N.<module>.lora_a.weight [r, in], .lora_b.weight [out, r], in torchtune's module names",
	"mlx-lm":    ": <module>.lora_a [in, r], .lora_b [r, out]",
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
