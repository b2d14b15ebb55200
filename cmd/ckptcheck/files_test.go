package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

func TestManifestCommand(t *testing.T) {
	dir := tinyCheckpoint(t)
	code, out, stderr := ckptcheck(t, "manifest", dir)
	var m struct {
		Schema  string `json:"schema"`
		Tool    string `json:"tool"`
		Files   []struct{ Name, SHA256 string }
		Tensors []struct{ Name, XXH3 string }
	}
	if err := json.Unmarshal([]byte(out), &m); err != nil || code != 0 {
		t.Fatalf("exit %d, %v: %s %s", code, err, out, stderr)
	}
	if m.Schema != "ckptcheck.manifest/v1" || !strings.HasPrefix(m.Tool, "ckptcheck ") || len(m.Files) != 5 || len(m.Tensors) != 46 {
		t.Errorf("%+v", m)
	}
	manifest := filepath.Join(t.TempDir(), "MANIFEST.json")
	os.WriteFile(manifest, []byte(out), 0o644)

	resharded := filepath.Join(t.TempDir(), "resharded")
	if err := fixture.WriteSharded(resharded, fixture.Tiny.Tensors(safetensors.BF16), 2, fixture.Tiny.Config("bfloat16")); err != nil {
		t.Fatal(err)
	}
	code, out, _ = ckptcheck(t, "validate", resharded, "--manifest", manifest)
	if code != 0 || !strings.Contains(out, "info manifest_shards_differ") {
		t.Errorf("re-sharded: exit %d\n%s", code, out)
	}
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"validate", dir, "--manifest", manifest}, 0, "OK"},
		{[]string{"validate", "../../testdata/exported", "--manifest", manifest}, 1, "manifest_mismatch"},
		{[]string{"validate", dir, dir, "--manifest", manifest}, 2, "give one PATH"},
		{[]string{"validate", dir, "--manifest", filepath.Join(dir, "config.json")}, 2, "not a ckptcheck manifest"},
		{[]string{"validate", dir, "--manifest", "absent.json"}, 2, "absent.json"},
		{[]string{"manifest"}, 2, "usage"},
	}
	for _, tt := range tests {
		code, out, stderr := ckptcheck(t, tt.args...)
		if code != tt.code || !strings.Contains(out+stderr, tt.want) {
			t.Errorf("%v: exit %d, want %d and %q\n%s%s", tt.args, code, tt.code, tt.want, out, stderr)
		}
	}
	// A broken checkpoint gets no manifest: its errors go to stderr.
	bad := tinyCheckpoint(t)
	shard := filepath.Join(bad, "model-00002-of-00003.safetensors")
	st, _ := os.Stat(shard)
	os.Truncate(shard, st.Size()-3)
	code, out, stderr = ckptcheck(t, "manifest", bad)
	if code != 1 || out != "" || !strings.Contains(stderr, "metadata_incomplete_buffer") || !strings.Contains(stderr, "no manifest written") {
		t.Errorf("broken: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
}

func TestValidateHashes(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("HF_HUB_CACHE", cache)
	snap, err := fixture.WriteHubSnapshot(cache, "org/tiny", "c0ffee", tinyCheckpoint(t))
	if err != nil {
		t.Fatal(err)
	}
	if code, out, stderr := ckptcheck(t, "validate", "--hashes", "org/tiny"); code != 0 {
		t.Errorf("good snapshot: exit %d\n%s%s", code, out, stderr)
	}
	target, _ := os.Readlink(filepath.Join(snap, "config.json"))
	os.WriteFile(filepath.Join(snap, target), []byte(`{"model_type": "qwen3"}`), 0o644)
	code, out, _ := ckptcheck(t, "validate", "--hashes", snap)
	if code != 1 || !strings.Contains(out, "hash_mismatch") || !strings.Contains(out, "config.json") {
		t.Errorf("corrupt blob: exit %d\n%s", code, out)
	}
	code, _, stderr := ckptcheck(t, "validate", "--hashes", tinyCheckpoint(t))
	if code != 2 || !strings.Contains(stderr, "hub-cache snapshots") {
		t.Errorf("plain folder: exit %d, %s", code, stderr)
	}
}

func TestDiffFilesFlags(t *testing.T) {
	pub := tinyCheckpoint(t)
	exp := filepath.Join(t.TempDir(), "exp")
	if err := fixture.WriteFile(filepath.Join(exp, "model.safetensors"), fixture.Tiny.Tensors(safetensors.BF16), nil); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"diff", pub, exp}, 0, "info weights_only_export"},
		{[]string{"diff", pub, exp, "--require-files"}, 1, "error missing_file"},
		{[]string{"diff", pub, exp, "--weights-only"}, 0, "OK\n"},
		{[]string{"diff", pub, exp, "--weights-only", "--require-files"}, 2, "contradict"},
	}
	for _, tt := range tests {
		code, out, stderr := ckptcheck(t, tt.args...)
		if code != tt.code || !strings.Contains(out+stderr, tt.want) {
			t.Errorf("%v: exit %d, want %d and %q\n%s%s", tt.args, code, tt.code, tt.want, out, stderr)
		}
	}
}

func TestConfigFile(t *testing.T) {
	pub, _ := filepath.Abs("../../testdata/published")
	exp, _ := filepath.Abs("../../testdata/exported")
	dir := t.TempDir()
	t.Chdir(dir)
	write := func(name, s string) string {
		os.WriteFile(name, []byte(s), 0o644)
		return filepath.Join(dir, name)
	}
	// Without a file: the example pair fails on its missing key.
	if code, _, _ := ckptcheck(t, "diff", pub, exp); code != 1 {
		t.Fatalf("exit %d", code)
	}
	write(".ckptcheck.yaml", `baseline:
  - code: missing_key
    key: "*.k_norm.weight"
    reason: the export drops one norm on purpose
`)
	code, out, _ := ckptcheck(t, "diff", pub, exp)
	if code != 0 || !strings.HasPrefix(out, "OK (45 warnings, 1 info, 1 suppressed)") ||
		!strings.Contains(out, "suppressed (1, baseline .ckptcheck.yaml)\n  1 finding missing_key model.layers.2.self_attn.k_norm.weight: the export drops one norm on purpose") {
		t.Errorf("exit %d\n%s", code, out)
	}
	code, out, _ = ckptcheck(t, "diff", "--format", "json", pub, exp)
	var rep struct {
		OK         bool
		Summary    struct{ Suppressed int }
		Suppressed []struct{ Code, Reason string }
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 || !rep.OK || rep.Summary.Suppressed != 1 || len(rep.Suppressed) != 1 || rep.Suppressed[0].Reason == "" {
		t.Errorf("json: exit %d, %+v, %v", code, rep, err)
	}
	// Flag defaults: the file's, unless the command line says otherwise.
	write(".ckptcheck.yaml", "flags:\n  fail-on: warning\ndiff:\n  weights-only: true\n")
	if code, out, _ := ckptcheck(t, "diff", pub, exp); code != 1 || strings.Contains(out, "config_changed") {
		t.Errorf("fail-on warning from the file: exit %d\n%s", code, out)
	}
	if code, _, _ := ckptcheck(t, "diff", pub, exp, "--fail-on", "never"); code != 0 {
		t.Errorf("the command line must win: exit %d", code)
	}
	other := write("other.yaml", "validate:\n  fail-on: never\n")
	if code, _, stderr := ckptcheck(t, "validate", "--config", other, pub, exp); code != 0 {
		t.Errorf("--config: exit %d %s", code, stderr)
	}
	write(".ckptcheck.yaml", "diff:\n  valeus: true\n")
	code, _, stderr := ckptcheck(t, "diff", pub, exp)
	if code != 2 || !strings.Contains(stderr, `.ckptcheck.yaml:2: diff: unknown flag "valeus"`) {
		t.Errorf("bad file: exit %d, %q", code, stderr)
	}
	write(".ckptcheck.yaml", "diff:\n  fail-on: sometimes\n")
	if code, _, stderr := ckptcheck(t, "diff", pub, exp); code != 2 || !strings.Contains(stderr, "--fail-on") {
		t.Errorf("bad value: exit %d, %q", code, stderr)
	}
	if code, _, stderr := ckptcheck(t, "diff", "--config", "absent.yaml", pub, exp); code != 2 || !strings.Contains(stderr, "absent.yaml") {
		t.Errorf("absent --config: exit %d, %q", code, stderr)
	}
	// --no-config: the bad file in the working directory is not read.
	if code, _, stderr := ckptcheck(t, "diff", "--no-config", pub, exp); code != 1 {
		t.Errorf("--no-config: exit %d, %q", code, stderr)
	}
	if code, _, stderr := ckptcheck(t, "validate", "--no-config", "--config", other, pub); code != 2 || !strings.Contains(stderr, "contradict") {
		t.Errorf("--no-config with --config: exit %d, %q", code, stderr)
	}
}

// TestDoubleDash: every argument after -- is a path, even one that looks
// like a flag, for every command that takes paths.
func TestDoubleDash(t *testing.T) {
	pub, _ := filepath.Abs("../../testdata/published")
	exp, _ := filepath.Abs("../../testdata/exported")
	dir := t.TempDir()
	t.Chdir(dir)
	tests := []struct {
		args []string
		code int
		want string // on stderr, or in the report
	}{
		{[]string{"diff", "--", pub, exp}, 1, "missing_key"},
		{[]string{"diff", "--format", "json", "--", pub, exp}, 1, `"schema"`},
		{[]string{"diff", pub, "--", "--html=x"}, 2, "--html=x"},
		{[]string{"diff", "--", "--values", exp}, 2, "--values"},
		{[]string{"validate", "--", pub, "--format"}, 2, "--format: "},
		{[]string{"validate", "--no-config", "--", pub}, 0, "OK"},
		{[]string{"inspect", "--", "--help"}, 2, "--help"},
		{[]string{"manifest", "--", "-x"}, 2, "-x"},
		{[]string{"merge", "--", "--part.json"}, 2, "--part.json"},
	}
	for _, tt := range tests {
		code, out, stderr := ckptcheck(t, tt.args...)
		if code != tt.code || !strings.Contains(out+stderr, tt.want) {
			t.Errorf("%q: exit %d, want %d and %q\n%s%s", tt.args, code, tt.code, tt.want, out, stderr)
		}
	}
	if _, err := os.Stat("x"); err == nil {
		t.Error("a path after -- was taken for --html")
	}
}
