package verify

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// fineTunePair writes a published Tiny model and an export with something
// of every kind: tensors moved within the tolerance, some left bit-identical
// (the unchanged summary), one re-initialized, one with a NaN, one missing,
// and an lm_head.weight that no longer equals the tied embedding.
func fineTunePair(t testing.TB) (pub, exp string) {
	t.Helper()
	dir := t.TempDir()
	q := fixture.Tiny
	pub, exp = filepath.Join(dir, "pub"), filepath.Join(dir, "exp")
	if err := fixture.WritePublished(pub, q); err != nil {
		t.Fatal(err)
	}
	other := q
	other.Seed = 77
	var out []fixture.Tensor
	for i, x := range q.Tensors(safetensors.BF16) {
		switch {
		case x.Name == "model.layers.2.self_attn.k_norm.weight":
			continue
		case x.Name == "model.layers.1.mlp.down_proj.weight":
			out = append(out, other.Tensor(fixture.Spec{Name: x.Name, Shape: x.Shape}, safetensors.BF16))
		case x.Name == "model.layers.3.self_attn.v_proj.weight":
			out = append(out, fixture.Map(x, safetensors.BF16, func(i int, v float32) float32 {
				if i == 5 {
					return float32(math.NaN())
				}
				return v
			}))
		case i%4 == 0:
			out = append(out, x)
		default:
			out = append(out, fixture.Perturb(x, safetensors.BF16, 1e-3, uint64(i)))
		}
		if x.Name == "model.embed_tokens.weight" {
			head := fixture.Perturb(x, safetensors.BF16, 1e-2, 5)
			head.Name = LMHead
			out = append(out, head)
		}
	}
	if err := fixture.WriteSharded(exp, out, 2, q.Config("bfloat16")); err != nil {
		t.Fatal(err)
	}
	return pub, exp
}

var fineTunePolicy = ValuePolicy{Default: Tolerance{Rtol: 1e-2},
	Rules: []Rule{{Match: "*.q_norm.weight", Skip: "not trained"}}}

// partitionRun runs diff --values for partition p (the whole run when p is
// zero) and returns its report as merge reads it back: through JSON.
func partitionRun(t testing.TB, pub, exp string, p Partition, ignores ...Ignore) *Report {
	t.Helper()
	d := diffPaths(t, pub, exp, DiffOptions{})
	values, err := d.CompareValues(context.Background(), ValueOptions{Policy: fineTunePolicy, Partition: p})
	if err != nil {
		t.Fatal(err)
	}
	return roundTrip(t, NewValuesReport(ValuesReportInput{FailOn: Error, Comparison: d, Values: values, Partition: p,
		Fingerprint: d.Fingerprint(fineTunePolicy, []string{"test"}), Ignores: ignores}))
}

func roundTrip(t testing.TB, r *Report) *Report {
	t.Helper()
	var b bytes.Buffer
	if err := r.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	back, err := ReadReport(&b)
	if err != nil {
		t.Fatal(err)
	}
	return back
}

// sameResult compares two reports as JSON, leaving out what may differ
// between a merged report and a single run's: how it was made, and the
// bytes read.
func sameResult(t *testing.T, what string, got, want *Report) {
	t.Helper()
	norm := func(r *Report) string {
		c := *r
		c.Partition, c.Merged = nil, nil
		if c.Values != nil {
			v := *c.Values
			v.BytesRead = 0
			c.Values = &v
		}
		if c.LoRA != nil {
			l := *c.LoRA
			l.BytesRead = 0
			c.LoRA = &l
		}
		b, err := json.MarshalIndent(&c, "", " ")
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if g, w := norm(got), norm(want); g != w {
		t.Errorf("%s: merged report differs from the single run's:\n%s", what, firstDiff(g, w))
	}
}

func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] {
			return "line " + al[i] + "\n want " + bl[i]
		}
	}
	return "lengths differ"
}

func TestMergeEqualsSingleRun(t *testing.T) {
	pub, exp := fineTunePair(t)
	whole := partitionRun(t, pub, exp, Partition{})
	// The fixture has a finding of every value kind, so that the test
	// sees each merged.
	for _, c := range []Code{CodeMissingKey, CodeValueMismatch, CodeReinitialized, CodeNonFinite, CodeTiedWeightMismatch, CodeUnchanged} {
		if codesOf(whole.Findings)[c] == 0 {
			t.Fatalf("the single run has no %s finding: %v", c, whole.Findings)
		}
	}
	if whole.Values.Skipped == 0 || whole.Values.WithinTolerance == 0 {
		t.Fatalf("the single run skips nothing or has nothing within tolerance: %+v", whole.Values)
	}
	for _, n := range []int{1, 2, 3, 5, 8, 64} {
		var parts []MergeInput
		var covered int
		for i := range n {
			r := partitionRun(t, pub, exp, Partition{Index: i, Count: n})
			if i > 0 && r.Partition.Structural != 0 {
				t.Errorf("n=%d: partition %d carries structural findings", n, i)
			}
			covered += len(r.Partition.Tensors)
			parts = append(parts, MergeInput{Name: filepath.Join("p", string(rune('a'+i%26))), Report: r})
		}
		if covered != parts[0].Report.Partition.Items {
			t.Errorf("n=%d: %d items covered, %d in all", n, covered, parts[0].Report.Partition.Items)
		}
		// Given in any order.
		parts[0], parts[n-1] = parts[n-1], parts[0]
		merged, err := Merge(parts, Error)
		if err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		sameResult(t, "n="+string(rune('0'+n%10)), merged, whole)
		if merged.Values.BytesRead != whole.Values.BytesRead {
			t.Errorf("n=%d: %d bytes read in all, %d in one run", n, merged.Values.BytesRead, whole.Values.BytesRead)
		}
	}
}

// TestMergeWithIgnores: findings an --ignore silences stay out of the
// merged report, the recomputed unchanged summary loses the keys ignored,
// and the count of what was ignored is the single run's.
func TestMergeWithIgnores(t *testing.T) {
	pub, exp := fineTunePair(t)
	var ignores []Ignore
	for _, spec := range []string{"dtype_mismatch", "nonfinite", "unchanged=model.layers.0.*", "missing_key=model.layers.2.*"} {
		ig, err := ParseIgnore(spec)
		if err != nil {
			t.Fatal(err)
		}
		ignores = append(ignores, ig)
	}
	whole := partitionRun(t, pub, exp, Partition{}, ignores...)
	if whole.Summary.Ignored < 3 || codesOf(whole.Findings)[CodeNonFinite] != 0 || codesOf(whole.Findings)[CodeUnchanged] != 1 {
		t.Fatalf("the ignores should silence something: ignored %d, %v", whole.Summary.Ignored, codesOf(whole.Findings))
	}
	for _, n := range []int{2, 3, 7} {
		var parts []MergeInput
		for i := range n {
			parts = append(parts, MergeInput{Name: "p", Report: partitionRun(t, pub, exp, Partition{Index: i, Count: n}, ignores...)})
		}
		merged, err := Merge(parts, Error)
		if err != nil {
			t.Fatal(err)
		}
		sameResult(t, "with ignores", merged, whole)
	}
}

func TestMergeProblems(t *testing.T) {
	pub, exp := fineTunePair(t)
	const n = 3
	var parts []MergeInput
	for i := range n {
		parts = append(parts, MergeInput{Name: "part" + string(rune('0'+i)) + ".json", Report: partitionRun(t, pub, exp, Partition{Index: i, Count: n})})
	}
	whole := partitionRun(t, pub, exp, Partition{})

	// A partition re-run after a failure merges like the first run.
	rerun := MergeInput{Name: "part1-again.json", Report: partitionRun(t, pub, exp, Partition{Index: 1, Count: n})}
	merged, err := Merge([]MergeInput{parts[0], rerun, parts[2]}, Error)
	if err != nil {
		t.Fatal(err)
	}
	sameResult(t, "re-run", merged, whole)

	// Missing and duplicated partitions are error findings.
	merged, err = Merge([]MergeInput{parts[0], parts[2], parts[2]}, Never)
	if err != nil {
		t.Fatal(err)
	}
	codes := codesOf(merged.Findings)
	if codes[CodePartitionMissing] != 1 || codes[CodePartitionDuplicate] != 1 || !merged.OK {
		t.Errorf("one missing, one duplicated, --fail-on never: %v (ok %v)", codes, merged.OK)
	}
	if got, want := len(merged.Values.Tensors), len(whole.Values.Tensors)-len(parts[1].Report.Values.Tensors); got != want {
		t.Errorf("%d tensors merged without partition 1, want %d", got, want)
	}
	merged, _ = Merge([]MergeInput{parts[1], parts[2]}, Error)
	if codesOf(merged.Findings)[CodeMissingKey] != 0 || merged.OK {
		t.Errorf("without partition 0: structural findings came from elsewhere, or the merge passed: %v", merged.Findings)
	}
	for _, f := range merged.Findings {
		if f.Code == CodePartitionMissing && !strings.Contains(f.Message, "structural") {
			t.Errorf("partition 0 missing does not say it carried the structural findings: %s", f.Message)
		}
	}

	// Reports of another run are refused.
	otherPolicy := func() *Report {
		d := diffPaths(t, pub, exp, DiffOptions{})
		pol := ValuePolicy{Default: Tolerance{Rtol: 2e-2}}
		v, err := d.CompareValues(context.Background(), ValueOptions{Policy: pol, Partition: Partition{Index: 1, Count: n}})
		if err != nil {
			t.Fatal(err)
		}
		return roundTrip(t, NewValuesReport(ValuesReportInput{FailOn: Error, Comparison: d, Values: v,
			Partition: Partition{Index: 1, Count: n}, Fingerprint: d.Fingerprint(pol, []string{"test"})}))
	}()
	damaged := *parts[1].Report
	dp := *damaged.Partition
	dp.Tensors = dp.Tensors[1:]
	damaged.Partition = &dp
	refused := []struct {
		name  string
		parts []MergeInput
		says  string
	}{
		{"other tolerance", []MergeInput{parts[0], {Name: "foreign.json", Report: otherPolicy}, parts[2]}, "foreign.json has fingerprint"},
		{"other count", []MergeInput{parts[0], {Name: "of4.json", Report: partitionRun(t, pub, exp, Partition{Index: 1, Count: 4})}}, "of4.json is partition 1/4 but part0.json is 0/3"},
		{"whole run", []MergeInput{parts[0], {Name: "whole.json", Report: whole}}, "whole.json: not a partition report"},
		{"damaged", []MergeInput{parts[0], {Name: "bad.json", Report: &damaged}, parts[2]}, "bad.json"},
		{"none", nil, "no reports"},
	}
	for _, tt := range refused {
		if _, err := Merge(tt.parts, Error); err == nil || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("%s: %v, want an error saying %q", tt.name, err, tt.says)
		}
	}
}

func TestFingerprint(t *testing.T) {
	pub, exp := fineTunePair(t)
	fp := func(pub, exp string, opt DiffOptions, pol ValuePolicy, settings ...string) string {
		return diffPaths(t, pub, exp, opt).Fingerprint(pol, settings)
	}
	base := fp(pub, exp, DiffOptions{}, fineTunePolicy, "v1")
	if base != fp(pub, exp, DiffOptions{}, fineTunePolicy, "v1") || !strings.HasPrefix(base, "sha256:") {
		t.Fatalf("not deterministic, or not a sha256: %s", base)
	}
	// The same files elsewhere (copied with their times) fingerprint alike.
	moved := filepath.Join(t.TempDir(), "elsewhere")
	copyDir(t, exp, moved)
	if got := fp(pub, moved, DiffOptions{}, fineTunePolicy, "v1"); got != base {
		t.Error("the same files at another path fingerprint differently")
	}
	tied := false
	rtol := 0.5
	changes := map[string]string{
		"settings":  fp(pub, exp, DiffOptions{}, fineTunePolicy, "v2"),
		"tolerance": fp(pub, exp, DiffOptions{}, ValuePolicy{Default: Tolerance{Rtol: 1e-2}}),
		"rule":      fp(pub, exp, DiffOptions{}, ValuePolicy{Default: Tolerance{Rtol: 1e-2}, Rules: []Rule{{Match: "*.q_norm.weight", Rtol: &rtol}}}, "v1"),
		"tied":      fp(pub, exp, DiffOptions{Tied: &tied}, fineTunePolicy, "v1"),
	}
	// A shard touched since: same bytes, another modification time.
	shard := filepath.Join(moved, "model-00001-of-00002.safetensors")
	if err := os.Chtimes(shard, time.Now(), time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	changes["mtime"] = fp(pub, moved, DiffOptions{}, fineTunePolicy, "v1")
	// A config that says another thing.
	cfg := filepath.Join(moved, "config.json")
	b, _ := os.ReadFile(cfg)
	os.WriteFile(cfg, bytes.Replace(b, []byte(`"bfloat16"`), []byte(`"float32"`), 1), 0o644)
	changes["config"] = fp(pub, moved, DiffOptions{}, fineTunePolicy, "v1")
	seen := map[string]string{base: "base"}
	for what, got := range changes {
		if prev, ok := seen[got]; ok {
			t.Errorf("changing the %s leaves the fingerprint as with the %s", what, prev)
		}
		seen[got] = what
	}
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	entries, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(to, e.Name())
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			t.Fatal(err)
		}
		st, _ := os.Stat(filepath.Join(from, e.Name()))
		if err := os.Chtimes(dst, st.ModTime(), st.ModTime()); err != nil {
			t.Fatal(err)
		}
	}
}

// FuzzMerge feeds merge a damaged partition report, of diff --values or
// validate --hashes, beside good ones of its kind (the seeds are the
// reports the tests produce): it is refused with one line or merged, never
// a panic, and a merge keeps every partition's statistics at most once.
func FuzzMerge(f *testing.F) {
	pub, exp := fineTunePair(f)
	var diffs []*Report
	for i := range 3 {
		r := partitionRun(f, pub, exp, Partition{Index: i, Count: 3})
		diffs = append(diffs, r)
		var b bytes.Buffer
		r.WriteJSON(&b)
		f.Add(b.Bytes())
	}
	hashes := hashesParts(f, 3)
	for _, r := range hashes {
		var b bytes.Buffer
		r.WriteJSON(&b)
		f.Add(b.Bytes())
	}
	f.Add([]byte(`{"schema":"ckptcheck.report/v1","command":"diff","values":{"tensors":[]},"partition":{"index":1,"count":3,"items":99999999999,"structural":-1,"tensors":[{"at":-5}]}}`))
	f.Add([]byte(`{"schema":"ckptcheck.report/v1","command":"validate","findings":[],"partition":{"index":0,"count":3,"items":7,"structural":-1,"tensors":[]}}`))
	f.Add([]byte(`{"schema":"ckptcheck.report/v1","command":"validate","findings":[],"partition":{"index":1,"count":4611686018427387904,"items":7,"structural":4611686018427387904,"tensors":[]}}`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		r, err := ReadReport(bytes.NewReader(doc))
		if err != nil {
			return
		}
		good := diffs
		if r.Command == "validate" {
			good = hashes
		}
		m, err := Merge([]MergeInput{{"good0", good[0]}, {"fuzzed", r}, {"good2", good[2]}}, Error)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("a message of more than one line: %q", err)
			}
			return
		}
		if m.Values == nil {
			return
		}
		seen := map[string]bool{}
		for _, s := range m.Values.Tensors {
			if seen[s.Key] {
				t.Fatalf("%s merged twice", s.Key)
			}
			seen[s.Key] = true
		}
	})
}
