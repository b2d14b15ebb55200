package report

import (
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/verify"
)

// A folder of several GGUF checkpoints is inspected one after another:
// each under a line naming its path and variant, then the verdict over all.
func TestInspectVariantsText(t *testing.T) {
	row := func(file string) verify.TensorRow {
		return verify.TensorRow{Name: "token_embd.weight", Encoding: "Q8_0", Shape: []uint64{10, 32}, Parameters: 320, Bytes: 340, File: file}
	}
	ins := func(rows ...verify.TensorRow) *verify.Inspection {
		return &verify.Inspection{Tensors: rows, Totals: verify.Totals{Tensors: len(rows), Parameters: 320 * uint64(len(rows)), Files: 1}}
	}
	for _, tt := range []struct {
		name     string
		findings []verify.Finding
		want     []string
	}{
		{name: "good", want: []string{
			"== repo [variant m-Q4_K_M]\nNAME",
			"m-Q4_K_M.gguf\n\n1 tensor, 320 parameters",
			"\n\n== repo [variant m-Q8_0]\nNAME",
		}},
		{name: "broken", findings: []verify.Finding{{Code: verify.CodeGGUFTooLarge, Severity: verify.Error, File: "repo/m-Q8_0.gguf", Message: "truncated"}},
			want: []string{"== repo [variant m-Q8_0]\n0 tensors", "FAIL: 1 error", "repo/m-Q8_0.gguf: truncated"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := verify.NewReport("inspect", verify.Error, []verify.Input{{Path: "repo", Variant: "m-Q4_K_M"}, {Path: "repo", Variant: "m-Q8_0"}}, tt.findings)
			second := ins(row("m-Q8_0.gguf"))
			if tt.findings != nil {
				second = ins()
			}
			r.Inspections = []verify.VariantInspection{{Variant: "m-Q4_K_M", Path: "repo", Inspection: ins(row("m-Q4_K_M.gguf"))},
				{Variant: "m-Q8_0", Path: "repo", Inspection: second}}
			out := text(t, r, Options{})
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("text lacks %q:\n%s", w, out)
				}
			}
		})
	}
}
