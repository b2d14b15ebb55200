package verify

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/adapter"
)

// TestInferPublishedSide: the layouts of TestInferConventions as the
// published side (a torchtitan, Megatron or nanoGPT checkpoint published in
// its trainer's names) against an HF export: --adapter published=infer maps
// exactly the keys the preset maps on that side, values bit-identical, the
// written adapter loads back as the published side's, and the negative
// controls fail, their conflicts said of the published side.
func TestInferPublishedSide(t *testing.T) {
	for _, c := range inferCases() {
		t.Run(c.name, func(t *testing.T) {
			m := c.model()
			exp := writeHFModel(t, m)
			pub := export(t, c.export(m.clone()), nil)
			preset := diffPaths(t, pub, exp, DiffOptions{WeightsOnly: true, Published: SideOptions{Chain: mustChain(t, c.preset), Fixed: true}})
			d := diffPaths(t, pub, exp, DiffOptions{WeightsOnly: true, Published: SideOptions{Infer: true}})
			if d.Inference == nil || d.InferredSide != Published {
				t.Fatalf("inference %v, of side %q", d.Inference != nil, d.InferredSide)
			}
			text := d.Inference.Text()
			want, got := matchedKeys(preset), matchedKeys(d)
			if len(want) == 0 || !slices.Equal(want, got) {
				t.Fatalf("inferred adapter matches %d keys, the preset %d; missing %v\n%s\n%+v", len(got), len(want), missingFrom(want, got), text, d.Inference.Report())
			}
			if got, want := mappedFindings(d.Findings, preset.Findings), mappedFindings(preset.Findings, preset.Findings); !slices.Equal(got, want) {
				t.Errorf("findings %v, the preset's %v\n%s", got, want, text)
			}
			rep, err := d.CompareValues(context.Background(), ValueOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Findings) != 0 || rep.BitIdentical != rep.Compared || rep.Compared < len(want) {
				t.Errorf("values: %d compared, %d identical; %v\n%s", rep.Compared, rep.BitIdentical, rep.Findings, text)
			}
			a, err := adapter.Parse("written.adapter", text)
			if err != nil {
				t.Fatal(err)
			}
			back := diffPaths(t, pub, exp, DiffOptions{WeightsOnly: true, Published: SideOptions{Chain: adapter.Chain{a}, Fixed: true}})
			if !slices.Equal(matchedKeys(back), got) || len(back.Findings) != len(d.Findings) {
				t.Errorf("written adapter: %d keys, %d findings; inferred %d keys, %d findings", len(matchedKeys(back)), len(back.Findings), len(got), len(d.Findings))
			}
			if c.broken == nil {
				return
			}
			bpub := export(t, c.broken(m.clone()), nil)
			bd := diffPaths(t, bpub, exp, DiffOptions{WeightsOnly: true, Published: SideOptions{Infer: true}})
			brep, err := bd.CompareValues(context.Background(), ValueOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(brep.Findings) == 0 && !slices.ContainsFunc(bd.Findings, func(f Finding) bool { return f.Severity == Error }) {
				t.Errorf("negative control passed: inference explained it away\n%s", bd.Inference.Text())
			}
			conflict := slices.IndexFunc(bd.Findings, func(f Finding) bool { return f.Code == CodeInferConflict })
			if c.conflict && (conflict < 0 || bd.Findings[conflict].Side != Published || strings.Contains(bd.Findings[conflict].Message, "in the export?")) {
				t.Errorf("no inference_conflict of the published side: %v\n%s", bd.Findings, bd.Inference.Text())
			}
		})
	}
}

// TestInferPublishedNoPreset: the layouts no preset covers, published in
// their trainer's names against an HF export, map every exported key with
// values bit-identical; their negative controls are inference_conflict.
func TestInferPublishedNoPreset(t *testing.T) {
	for _, c := range noPresetCases() {
		t.Run(c.name, func(t *testing.T) {
			m := c.model()
			exp := writeHFModel(t, m)
			d := diffPaths(t, export(t, c.export(m.clone()), nil), exp, DiffOptions{WeightsOnly: true, Published: SideOptions{Infer: true}})
			text := d.Inference.Text()
			if got := len(matchedKeys(d)); got != len(d.Exported.View.Tensors) {
				t.Fatalf("%d of %d keys mapped\n%s\n%+v", got, len(d.Exported.View.Tensors), text, d.Inference.Report())
			}
			rep, err := d.CompareValues(context.Background(), ValueOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Findings) != 0 || rep.BitIdentical != rep.Compared || slices.ContainsFunc(d.Findings, func(f Finding) bool { return f.Severity == Error }) {
				t.Errorf("findings %v, values %v (%d of %d identical)\n%s", codesOf(d.Findings), rep.Findings, rep.BitIdentical, rep.Compared, text)
			}
			bd := diffPaths(t, export(t, c.broken(m.clone()), nil), exp, DiffOptions{WeightsOnly: true, Published: SideOptions{Infer: true}})
			if !slices.ContainsFunc(bd.Findings, func(f Finding) bool { return f.Code == CodeInferConflict && f.Side == Published }) {
				t.Errorf("negative control: no inference_conflict of the published side: %v\n%s", codesOf(bd.Findings), bd.Inference.Text())
			}
		})
	}
}

// mappedFindings lists "code key" of fs, keys of the HF naming, but what the
// preset's findings drop (a training buffer the preset knows, torchtitan's
// expert_bias): inference leaves it unmapped, a missing_key whose message
// says why.
func mappedFindings(fs, preset []Finding) []string {
	dropped := map[string]bool{}
	for _, f := range preset {
		if f.Code == CodeAdapterDropped {
			dropped[f.Key] = true
		}
	}
	var out []string
	for _, f := range fs {
		if f.Code == CodeAdapterDropped || f.Code == CodeMissingKey && dropped[f.Key] && strings.Contains(f.Message, "inference did not map it") {
			continue
		}
		out = append(out, string(f.Code)+" "+f.Key)
	}
	slices.Sort(out)
	return out
}

// TestInferOneSide: inference needs one HF-named side as its template.
func TestInferOneSide(t *testing.T) {
	m := hfLlama("llama", 0)
	pub, exp := writeHFModel(t, m), export(t, trainerNames(m.tensors()), nil)
	_, err := Diff(context.Background(), openCheckpoint(t, pub), openCheckpoint(t, exp),
		DiffOptions{WeightsOnly: true, Published: SideOptions{Infer: true}, Exported: SideOptions{Infer: true}})
	if err == nil || !strings.Contains(err.Error(), "one side at most infers") {
		t.Errorf("both sides infer: %v", err)
	}
}
