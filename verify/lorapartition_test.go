package verify

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/checkpoint"
)

// loraPartitionRun is diff --lora for partition p, read back through JSON
// as merge reads it.
func loraPartitionRun(t *testing.T, base, merged, ad *checkpoint.Checkpoint, p Partition) *Report {
	t.Helper()
	d, err := Diff(context.Background(), base, merged, DiffOptions{WeightsOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	l, err := d.CompareLoRA(context.Background(), ad, LoRAOptions{Partition: p})
	if err != nil {
		t.Fatal(err)
	}
	return roundTrip(t, NewLoRAReport(LoRAReportInput{FailOn: Error, Comparison: d, LoRA: l, Partition: p,
		Fingerprint: d.LoRAFingerprint(ad, 0, []string{"test"})}))
}

func TestLoRAMergeEqualsSingleRun(t *testing.T) {
	for _, dora := range []bool{false, true} {
		t.Run(fmt.Sprintf("dora=%v", dora), func(t *testing.T) { loraMergeEqualsSingleRun(t, dora) })
	}
}

func loraMergeEqualsSingleRun(t *testing.T, dora bool) {
	f := newLoRAFixture(3, false)
	f.configExtraTarget = "o_proj" // an adapter finding: lora_target_empty
	m := f.merged(true, loraAlpha, map[string]string{f.targets[1]: ""})
	want := []Code{CodeLoRATargetEmpty, CodeLoRAMergeMismatch, CodeLoRANotMerged, CodeLoRAMergeExtra}
	if dora {
		f.withDoRA(3)
		m = f.mergedDoRA(false, f.scale)
		m[f.targets[1]+".weight"] = f.base[f.targets[1]+".weight"]
		want = []Code{CodeLoRATargetEmpty, CodeLoRANotMerged, CodeLoRAMergeExtra}
	}
	m["lm_head.weight"] = f.base["lm_head.weight"]
	m["model.layers.0.input_layernorm.weight"] = append([]float32(nil), m["model.layers.0.input_layernorm.weight"]...)
	m["model.layers.0.input_layernorm.weight"][0] *= 2
	base, merged := openCk(t, f.write(t, t.TempDir(), f.base)), openCk(t, f.write(t, t.TempDir(), m))
	ad := openCk(t, f.writeAdapter(t, t.TempDir(), ""))
	whole := loraPartitionRun(t, base, merged, ad, Partition{})
	for _, c := range want {
		if codesOf(whole.Findings)[c] == 0 {
			t.Fatalf("the single run has no %s finding: %v", c, whole.Findings)
		}
	}
	if dora && (len(whole.LoRA.Targets) != 2 || whole.LoRA.Targets[0].Verdict != "merged") {
		t.Fatalf("targets %+v", whole.LoRA.Targets)
	}
	for _, n := range []int{1, 2, 3} {
		var parts []MergeInput
		covered := 0
		for i := range n {
			r := loraPartitionRun(t, base, merged, ad, Partition{Index: i, Count: n})
			if i > 0 && r.Partition.Structural != 0 {
				t.Errorf("n=%d: partition %d carries structural findings", n, i)
			}
			covered += len(r.Partition.Tensors)
			parts = append(parts, MergeInput{Name: fmt.Sprintf("p%d", i), Report: r})
		}
		if covered != parts[0].Report.Partition.Items {
			t.Errorf("n=%d: %d items covered, %d in all", n, covered, parts[0].Report.Partition.Items)
		}
		parts[0], parts[n-1] = parts[n-1], parts[0]
		got, err := Merge(parts, Error)
		if err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		sameResult(t, fmt.Sprintf("n=%d", n), got, whole)
		if got.LoRA.BytesRead != whole.LoRA.BytesRead {
			t.Errorf("n=%d: %d bytes read in all, %d in one run", n, got.LoRA.BytesRead, whole.LoRA.BytesRead)
		}
	}
}

// TestLoRAMergeRefused: parts of runs with other adapters, or a part of a
// diff --values run, do not merge.
func TestLoRAMergeRefused(t *testing.T) {
	f := newLoRAFixture(3, false)
	base, merged := openCk(t, f.write(t, t.TempDir(), f.base)), openCk(t, f.write(t, t.TempDir(), f.merged(true, f.scale, nil)))
	ad := openCk(t, f.writeAdapter(t, t.TempDir(), ""))
	other := openCk(t, f.writeAdapter(t, t.TempDir(), "model.layers.0.self_attn.k_proj"))
	p0 := loraPartitionRun(t, base, merged, ad, Partition{Index: 0, Count: 2})
	p1 := loraPartitionRun(t, base, merged, other, Partition{Index: 1, Count: 2})
	if _, err := Merge([]MergeInput{{"a", p0}, {"other", p1}}, Error); err == nil || !strings.Contains(err.Error(), "fingerprint") {
		t.Fatalf("parts with different adapters merged: %v", err)
	}
	d, err := Diff(context.Background(), base, merged, DiffOptions{WeightsOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	p := Partition{Index: 1, Count: 2}
	v, err := d.CompareValues(context.Background(), ValueOptions{Partition: p})
	if err != nil {
		t.Fatal(err)
	}
	vr := roundTrip(t, NewValuesReport(ValuesReportInput{FailOn: Error, Comparison: d, Values: v, Partition: p, Fingerprint: p0.Partition.Fingerprint}))
	if _, err := Merge([]MergeInput{{"a", p0}, {"v", vr}}, Error); err == nil || !strings.Contains(err.Error(), "different runs") {
		t.Fatalf("a --lora and a --values part merged: %v", err)
	}
}
