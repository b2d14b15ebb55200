package report

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/safetensors"
	"github.com/ckptcheck/ckptcheck/verify"
)

// derivedReport is a diff --values --expect derived of two layers: every
// tensor moved a little, layer 1's up_proj too far, layer 0's o_proj frozen.
func derivedReport() *verify.Report {
	bound := verify.DefaultDrift
	v := &verify.ValueReport{Expect: verify.ExpectDerived}
	var findings []verify.Finding
	for l := range 2 {
		for _, kind := range []string{"self_attn.o_proj", "mlp.up_proj", "input_layernorm"} {
			key := fmt.Sprintf("model.layers.%d.%s.weight", l, kind)
			s := verify.TensorStats{Key: key, Published: safetensors.BF16, Exported: safetensors.BF16, Elements: 64,
				RelL2: 0.0123, Cosine: 0.9999, MaxAbsDiff: 1e-3, Bound: &bound}
			switch {
			case l == 0 && kind == "self_attn.o_proj":
				s.RelL2, s.Cosine, s.MaxAbsDiff, s.BitIdentical = 0, 1, 0, true
				v.BitIdentical++
			case l == 1 && kind == "mlp.up_proj":
				s.RelL2, s.Cosine = 0.41, 0.91
				v.Mismatched++
				findings = append(findings, verify.Finding{Code: verify.CodeDriftExcessive, Severity: verify.Error, Key: key, Message: "too far"})
			default:
				v.WithinTolerance++
			}
			v.Compared++
			v.Tensors = append(v.Tensors, s)
		}
	}
	r := verify.NewReport("diff", verify.Error, nil, findings)
	r.Values = v
	return r
}

func TestDerivedText(t *testing.T) {
	out := render(t, "text", derivedReport(), goldenOptions)
	for _, want := range []string{
		"6 compared as a fine-tune (--expect derived): 1 bit-identical, 4 within the drift bound, 1 failed as a fine-tune",
		"drift per layer (largest relative L2",
		"layer  o_proj  up_proj  in_norm",
		"0      =       0.012    0.012",
		"1      0.012   »0.41    0.012",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text report lacks %q:\n%s", want, out)
		}
	}
	// Under --expect equal there is no drift table.
	r := derivedReport()
	r.Values.Expect = verify.ExpectEqual
	if out := render(t, "text", r, goldenOptions); strings.Contains(out, "drift per layer") {
		t.Errorf("a drift table under expect equal:\n%s", out)
	}
}

func TestDerivedHTML(t *testing.T) {
	out := render(t, "html", derivedReport(), goldenOptions)
	for _, want := range []string{"drift from the published values", "changed beyond the drift bound", "--expect derived", `data-status="drift"`, "drift bound: relative L2 ≤ 0.25, cosine ≥ 0.95"} {
		if !strings.Contains(out, want) {
			t.Errorf("HTML report lacks %q", want)
		}
	}
	r := derivedReport()
	r.Values.Expect = verify.ExpectEqual
	if out := render(t, "html", r, goldenOptions); strings.Contains(out, "changed beyond the drift bound") || strings.Contains(out, "drift from the published") {
		t.Error("the derived legend under expect equal")
	}
}
