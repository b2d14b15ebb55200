package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// fineTuned writes a published Tiny model and a fine-tune of it that lost a
// norm: structural and value findings both.
func fineTuned(t *testing.T) (pub, exp string) {
	t.Helper()
	dir := t.TempDir()
	pub, exp = filepath.Join(dir, "pub"), filepath.Join(dir, "exp")
	if err := fixture.WritePublished(pub, fixture.Tiny); err != nil {
		t.Fatal(err)
	}
	var out []fixture.Tensor
	for i, x := range fixture.Tiny.Tensors(safetensors.BF16) {
		switch {
		case x.Name == "model.norm.weight":
		case i%3 == 0:
			out = append(out, x)
		default:
			out = append(out, fixture.Perturb(x, safetensors.BF16, 1e-3, uint64(i)))
		}
	}
	if err := fixture.WriteSharded(exp, out, 2, fixture.Tiny.Config("bfloat16")); err != nil {
		t.Fatal(err)
	}
	return pub, exp
}

// clearPartitionEnv unsets what --partition auto reads.
func clearPartitionEnv(t *testing.T) {
	for _, k := range []string{"SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_MIN", "SLURM_ARRAY_TASK_STEP", "SLURM_ARRAY_TASK_COUNT",
		"JOB_COMPLETION_INDEX", "CI_NODE_INDEX", "CI_NODE_TOTAL"} {
		t.Setenv(k, "")
	}
}

func TestPartitionUsage(t *testing.T) {
	clearPartitionEnv(t)
	pub, exp := fineTuned(t)
	tests := []struct {
		args []string
		says string
	}{
		{[]string{"--partition", "0/2"}, "needs --values"},
		{[]string{"--values", "--partition", "2/2", "--format", "json"}, "from 0 to 1"},
		{[]string{"--values", "--partition", "auto/2", "--format", "json"}, "none of SLURM_ARRAY_TASK_ID"},
		{[]string{"--values", "--partition", "0/2", "--format", "text"}, "add --format json"},
		{[]string{"--values", "--partition", "0/2"}, "add --format json"},
		{[]string{"--values", "--partition", "0/2", "--explain", "model.norm.weight"}, "do not go together"},
	}
	for _, tt := range tests {
		code, _, stderr := ckptcheck(t, append(append([]string{"diff"}, tt.args...), pub, exp)...)
		if code != 2 || !strings.Contains(stderr, tt.says) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line saying %q", tt.args, code, stderr, tt.says)
		}
	}
}

func TestPartitionAuto(t *testing.T) {
	clearPartitionEnv(t)
	t.Setenv("CI_NODE_INDEX", "2")
	t.Setenv("CI_NODE_TOTAL", "3")
	pub, exp := fineTuned(t)
	code, out, stderr := ckptcheck(t, "diff", "--values", "--fail-on", "never", "--format", "json", "--partition", "auto/3", pub, exp)
	if code != 0 || !strings.Contains(stderr, "partition 1/3 (from CI_NODE_INDEX=2)") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	var rep struct {
		Partition struct {
			Index       int    `json:"index"`
			Count       int    `json:"count"`
			From        string `json:"from"`
			Fingerprint string `json:"fingerprint"`
			Tensors     []struct {
				Key string `json:"key"`
			} `json:"tensors"`
		} `json:"partition"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("the report is not JSON: %v", err)
	}
	if p := rep.Partition; p.Index != 1 || p.Count != 3 || p.From != "CI_NODE_INDEX=2" || !strings.HasPrefix(p.Fingerprint, "sha256:") || len(p.Tensors) == 0 {
		t.Errorf("%+v", p)
	}
}

// partitionReports runs diff --values in n partitions into files.
func partitionReports(t *testing.T, dir string, n int, args ...string) []string {
	t.Helper()
	var files []string
	for i := range n {
		code, out, stderr := ckptcheck(t, append([]string{"diff", "--values", "--fail-on", "never", "--format", "json", "--partition", fmt.Sprintf("%d/%d", i, n)}, args...)...)
		if code != 0 {
			t.Fatalf("partition %d/%d: exit %d: %s", i, n, code, stderr)
		}
		f := filepath.Join(dir, fmt.Sprintf("part-%d-of-%d.json", i, n))
		if err := os.WriteFile(f, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	return files
}

func TestMergeCommand(t *testing.T) {
	clearPartitionEnv(t)
	pub, exp := fineTuned(t)
	dir := t.TempDir()
	flags := []string{"--rtol", "1e-2", "--ignore", "unchanged=model.layers.1.*", pub, exp}
	files := partitionReports(t, dir, 3, flags...)

	// Text: the single run's, with the line saying what was merged.
	wantCode, want, _ := ckptcheck(t, append([]string{"diff", "--values"}, flags...)...)
	code, got, stderr := ckptcheck(t, append([]string{"merge"}, files...)...)
	if code != wantCode || code != 1 {
		t.Fatalf("merge exit %d, single run %d (stderr %q)", code, wantCode, stderr)
	}
	lines := strings.Split(got, "\n")
	if !strings.HasPrefix(lines[3], "  merged: 3 of 3 partitions, fingerprint ") {
		t.Errorf("no merged line: %q", lines[3])
	}
	if merged := strings.Join(append(lines[:3:3], lines[4:]...), "\n"); merged != want {
		t.Errorf("merged text differs from the single run's:\n%s\nwant\n%s", merged, want)
	}
	if !strings.Contains(want, "missing_key") || !strings.Contains(want, "unchanged") {
		t.Fatalf("the pair should give structural and value findings: %s", want)
	}

	// JSON, in any order.
	_, single, _ := ckptcheck(t, append([]string{"diff", "--values", "--format", "json"}, flags...)...)
	_, mergedJSON, _ := ckptcheck(t, "merge", "--format", "json", files[2], files[0], files[1])
	if a, b := withoutMergeFields(t, mergedJSON), withoutMergeFields(t, single); a != b {
		t.Errorf("merged JSON differs from the single run's:\n%s\nwant\n%s", a, b)
	}

	other := partitionReports(t, t.TempDir(), 3, "--rtol", "2e-2", pub, exp)
	notJSON := filepath.Join(dir, "notes.txt")
	os.WriteFile(notJSON, []byte("hello"), 0o644)
	_, singleFile, _ := ckptcheck(t, "diff", "--values", "--format", "json", pub, exp)
	whole := filepath.Join(dir, "whole.json")
	os.WriteFile(whole, []byte(singleFile), 0o644)
	tests := []struct {
		args []string
		code int
		says string
	}{
		{[]string{files[0], files[1]}, 1, ""},
		{[]string{"--fail-on", "never", files[0], files[1]}, 0, ""},
		{[]string{files[0], files[1], files[2], files[1]}, 1, ""},
		{[]string{files[0], other[1], files[2]}, 2, "fingerprint"},
		{[]string{files[0], notJSON}, 2, "notes.txt: not a ckptcheck JSON report"},
		{[]string{files[0], filepath.Join(dir, "nope.json")}, 2, "nope.json"},
		{[]string{files[0], whole}, 2, "not a partition report"},
		{nil, 2, "usage: ckptcheck merge"},
	}
	for _, tt := range tests {
		code, out, stderr := ckptcheck(t, append([]string{"merge"}, tt.args...)...)
		if code != tt.code || !strings.Contains(stderr, tt.says) {
			t.Errorf("merge %v: exit %d, stderr %q; want %d saying %q", tt.args, code, stderr, tt.code, tt.says)
		}
		if code == 1 && !strings.Contains(out, "partition_") {
			t.Errorf("merge %v: no partition finding in %s", tt.args, out)
		}
	}
}

// withoutMergeFields is a JSON report without what a merge may change:
// how it was made and the bytes read.
func withoutMergeFields(t *testing.T, doc string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatalf("%v: %s", err, doc)
	}
	delete(m, "merged")
	delete(m["values"].(map[string]any), "bytes_read")
	b, _ := json.MarshalIndent(m, "", " ")
	return string(b)
}

// TestFingerprintFollowsFlags: every flag that changes a result, and the
// contents of the files flags name, change the fingerprint; flags that only
// change the presentation do not.
func TestFingerprintFollowsFlags(t *testing.T) {
	clearPartitionEnv(t)
	pub, exp := fineTuned(t)
	dir := t.TempDir()
	adapterFile := filepath.Join(dir, "mine.adapter")
	os.WriteFile(adapterFile, []byte("name mine\nstrip-prefix student.\n"), 0o644)
	fingerprint := func(args ...string) string {
		t.Helper()
		code, out, stderr := ckptcheck(t, append(append([]string{"diff", "--values", "--fail-on", "never", "--format", "json", "--partition", "0/2"}, args...), pub, exp)...)
		if code == 2 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		var rep struct {
			Partition struct{ Fingerprint string } `json:"partition"`
		}
		json.Unmarshal([]byte(out), &rep)
		return rep.Partition.Fingerprint
	}
	base := fingerprint()
	for _, same := range [][]string{{"--verbose"}, {"--quiet"}, {"--fail-on", "info"}, {"--format", "json"}, {"--html", filepath.Join(dir, "page.html")}} {
		if got := fingerprint(same...); got != base {
			t.Errorf("%v changes the fingerprint", same)
		}
	}
	seen := map[string]string{base: "no flags"}
	for _, args := range [][]string{{"--rtol", "1e-2"}, {"--atol", "1e-2"}, {"--tied", "false"}, {"--dtype", "bf16"},
		{"--strip-prefix", "x."}, {"--rename", "^a=b"}, {"--adapter", "exported=hf"}, {"--adapter-file", adapterFile},
		{"--ignore", "unchanged"}} {
		got := fingerprint(args...)
		if prev, ok := seen[got]; ok {
			t.Errorf("%v: the fingerprint of %s", args, prev)
		}
		seen[got] = fmt.Sprint(args)
	}
	before := fingerprint("--adapter-file", adapterFile)
	os.WriteFile(adapterFile, []byte("name mine\nstrip-prefix teacher.\n"), 0o644)
	if fingerprint("--adapter-file", adapterFile) == before {
		t.Error("another adapter file under the same name keeps the fingerprint")
	}
}

// TestMergeAppliesBaseline: a configuration file's baseline is applied by
// merge to the merged report, as by a single run, and not by the parts,
// whose reports keep every finding for the merge.
func TestMergeAppliesBaseline(t *testing.T) {
	clearPartitionEnv(t)
	pub, exp := fineTuned(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "ckptcheck.yaml")
	os.WriteFile(cfg, []byte("baseline:\n  - code: missing_key\n    reason: the norm is re-added at upload\n"), 0o644)
	files := partitionReports(t, dir, 2, "--config", cfg, "--rtol", "1e-2", pub, exp)
	if b, _ := os.ReadFile(files[0]); !strings.Contains(string(b), `"code": "missing_key"`) {
		t.Fatalf("part 0 applied the baseline: its report lacks the missing_key finding")
	}
	_, single, _ := ckptcheck(t, "diff", "--values", "--format", "json", "--config", cfg, "--rtol", "1e-2", pub, exp)
	code, merged, stderr := ckptcheck(t, append([]string{"merge", "--format", "json", "--config", cfg}, files...)...)
	if code == 2 {
		t.Fatal(stderr)
	}
	if !strings.Contains(merged, `"suppressed"`) || !strings.Contains(merged, "re-added at upload") {
		t.Errorf("the merged report has no suppressed missing_key")
	}
	if a, b := withoutMergeFields(t, merged), withoutMergeFields(t, single); a != b {
		t.Errorf("merged JSON with a baseline differs from the single run's:\n%s\nwant\n%s", a, b)
	}
}
