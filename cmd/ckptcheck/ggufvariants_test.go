package main

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
	w "github.com/ckptcheck/ckptcheck/internal/ggufwrite"
	"github.com/ckptcheck/ckptcheck/internal/remotetest"
)

// appendF32 "quantizes" to GGML's F32: the values as they are.
func appendF32(dst []byte, x []float32) []byte {
	for _, v := range x {
		dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(v))
	}
	return dst
}

// writeGGUFVariants writes a folder of tiny GGUF files of two
// quantizations (a Hub repo's Q8_0 and F32).
func writeGGUFVariants(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := w.WriteQwen3(filepath.Join(dir, "tiny-Q8_0.gguf"), fixture.Tiny, 8, 7, w.AppendQ8_0); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteQwen3(filepath.Join(dir, "tiny-F32.gguf"), fixture.Tiny, 0, 0, appendF32); err != nil {
		t.Fatal(err)
	}
	return dir
}

// A folder of GGUF files of two quantizations is two checkpoints: without
// --variant, diff (and validate --manifest, a manifest being of one) says
// to choose one (exit 2) and lists them; --variant picks one by its
// quantization tag, in any case, or by its file name.
func TestGGUFVariants(t *testing.T) {
	dir := writeGGUFVariants(t)
	manifest := filepath.Join(t.TempDir(), "m.json")
	code, out, stderr := ckptcheck(t, "manifest", filepath.Join(dir, "tiny-Q8_0.gguf"))
	if code != 0 {
		t.Fatalf("manifest: exit %d\n%s", code, stderr)
	}
	if err := os.WriteFile(manifest, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"diff", "../../testdata/published", dir}, {"validate", "--manifest", manifest, dir}} {
		code, _, stderr := ckptcheck(t, args...)
		if code != 2 || !strings.Contains(stderr, "holds 2 GGUF checkpoints, one per quantization: choose one with --variant (F32: tiny-F32.gguf, Q8_0: tiny-Q8_0.gguf)") {
			t.Errorf("%s without --variant: exit %d\n%s", args, code, stderr)
		}
	}
	for _, variant := range []string{"q8_0", "tiny-Q8_0.gguf", "F32"} {
		code, out, stderr := ckptcheck(t, "diff", "../../testdata/published", dir, "--variant", variant, "--values")
		if code != 0 || !strings.Contains(out, "variant tiny-") {
			t.Errorf("diff --variant %s: exit %d\n%s%s", variant, code, out, stderr)
		}
	}
	code, out, stderr = ckptcheck(t, "validate", dir, "--variant", "Q8_0", "--format", "json")
	if code != 0 || !strings.Contains(out, `"variant": "tiny-Q8_0"`) || !strings.Contains(out, `"code": "variants"`) {
		t.Errorf("validate --variant Q8_0: exit %d\n%s%s", code, out, stderr)
	}
	if code, _, stderr := ckptcheck(t, "inspect", dir, "--variant", "Q4_K_M"); code != 2 || !strings.Contains(stderr, "no Q4_K_M variant (variants here: F32: tiny-F32.gguf, Q8_0: tiny-Q8_0.gguf)") {
		t.Errorf("an absent quantization: exit %d\n%s", code, stderr)
	}
}

// Partitions and merge work on GGUF as on safetensors: diff --values
// --partition i/n of an HF checkpoint against one quantization of a folder
// of GGUF files merges to the single run's report, its value finding (one
// matrix written with its values negated) and the tokenizer finding (the
// GGUF lacks the published chat template) included.
func TestGGUFPartitionMerge(t *testing.T) {
	clearPartitionEnv(t)
	pub := t.TempDir()
	for _, name := range []string{"config.json", "model.safetensors.index.json", "model-00001-of-00003.safetensors", "model-00002-of-00003.safetensors", "model-00003-of-00003.safetensors"} {
		b, err := os.ReadFile(filepath.Join("../../testdata/published", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(pub, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(pub, "tokenizer_config.json"), []byte(`{"chat_template": "{{ messages }}"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	matrices := 0
	negateFifth := func(dst []byte, x []float32) []byte {
		if len(x) <= fixture.Tiny.Intermediate {
			return w.AppendQ8_0(dst, x) // a row, to size the tensors
		}
		if matrices++; matrices == 5 {
			for i := range x {
				x[i] = -x[i]
			}
		}
		return w.AppendQ8_0(dst, x)
	}
	if err := w.WriteQwen3(filepath.Join(dir, "tiny-Q8_0.gguf"), fixture.Tiny, 8, 7, negateFifth); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteQwen3(filepath.Join(dir, "tiny-F32.gguf"), fixture.Tiny, 0, 0, appendF32); err != nil {
		t.Fatal(err)
	}
	files := partitionReports(t, t.TempDir(), 3, "--variant", "Q8_0", pub, dir)
	_, single, _ := ckptcheck(t, "diff", "--values", "--format", "json", "--variant", "Q8_0", pub, dir)
	code, merged, stderr := ckptcheck(t, "merge", "--format", "json", files[2], files[0], files[1])
	if code != 1 || !strings.Contains(merged, `"tokenizer_changed"`) || !strings.Contains(merged, `"quantization_error"`) {
		t.Fatalf("merge: exit %d, want 1 with tokenizer_changed and quantization_error\n%s%s", code, merged, stderr)
	}
	if a, b := withoutMergeFields(t, merged), withoutMergeFields(t, single); a != b {
		t.Errorf("merged JSON differs from the single run's:\n%s\nwant\n%s", a, b)
	}
}

// truncateGGUF writes the first n bytes of a folder's GGUF file as another
// quantization: a variant broken among good ones.
func truncateGGUF(t *testing.T, dir, from, to string, n int) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, from))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, to), b[:n], 0o644); err != nil {
		t.Fatal(err)
	}
}

// Without --variant, validate and inspect take every GGUF checkpoint of a
// folder, like a linter given several packages: one report, one exit
// status, an input per variant, findings on the file they are about.
func TestGGUFVariantsEach(t *testing.T) {
	broken := func(t *testing.T, dir string) { truncateGGUF(t, dir, "tiny-Q8_0.gguf", "tiny-Q4_K_M.gguf", 200) }
	for _, tt := range []struct {
		name     string
		setup    func(t *testing.T, dir string)
		args     []string
		code     int
		variants []string
		// errorIn is the file every error finding is on.
		errorIn string
	}{
		{name: "validate good", args: []string{"validate"}, variants: []string{"tiny-F32", "tiny-Q8_0"}},
		{name: "inspect good", args: []string{"inspect"}, variants: []string{"tiny-F32", "tiny-Q8_0"}},
		{name: "validate broken", setup: broken, args: []string{"validate"}, code: 1, variants: []string{"tiny-F32", "tiny-Q4_K_M", "tiny-Q8_0"}, errorIn: "tiny-Q4_K_M.gguf"},
		{name: "inspect broken", setup: broken, args: []string{"inspect"}, code: 1, variants: []string{"tiny-F32", "tiny-Q4_K_M", "tiny-Q8_0"}, errorIn: "tiny-Q4_K_M.gguf"},
		{name: "validate --variant", setup: broken, args: []string{"validate", "--variant", "Q8_0"}, variants: []string{"tiny-Q8_0"}},
		{name: "inspect --variant", setup: broken, args: []string{"inspect", "--variant", "q4_k_m"}, code: 1, variants: []string{"tiny-Q4_K_M"}, errorIn: "tiny-Q4_K_M.gguf"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeGGUFVariants(t)
			if tt.setup != nil {
				tt.setup(t, dir)
			}
			code, out, stderr := ckptcheck(t, append(tt.args, "--format", "json", dir)...)
			var rep struct {
				Inputs []struct {
					Variant string
					Files   []string
				}
				Findings []struct {
					Code, Severity, File string
				}
				Inspections []struct {
					Variant, Path string
					Totals        struct{ Tensors int }
				}
				Totals *struct{ Tensors int }
			}
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatalf("exit %d: %v\n%s%s", code, err, out, stderr)
			}
			var variants []string
			for _, in := range rep.Inputs {
				variants = append(variants, in.Variant)
			}
			if code != tt.code || !slices.Equal(variants, tt.variants) {
				t.Errorf("exit %d, inputs %q; want %d, %q\n%s%s", code, variants, tt.code, tt.variants, out, stderr)
			}
			errors := 0
			for _, f := range rep.Findings {
				if f.Severity == "error" {
					errors++
					if filepath.Base(f.File) != tt.errorIn {
						t.Errorf("%s on %s, want on %s", f.Code, f.File, tt.errorIn)
					}
				}
				if f.Code == "variants" && len(tt.variants) > 1 {
					t.Errorf("every variant was checked, yet: %+v", f)
				}
			}
			if (errors > 0) != (tt.errorIn != "") {
				t.Errorf("%d errors, want them on %q", errors, tt.errorIn)
			}
			if tt.args[0] != "inspect" {
				return
			}
			if len(tt.variants) == 1 {
				if rep.Totals == nil || rep.Inspections != nil {
					t.Errorf("one variant: want the inspection inlined\n%s", out)
				}
				return
			}
			if rep.Totals != nil || len(rep.Inspections) != len(tt.variants) {
				t.Fatalf("want an inspection per variant\n%s", out)
			}
			for i, ins := range rep.Inspections {
				if ins.Variant != tt.variants[i] || ins.Path != dir || ins.Variant != "tiny-Q4_K_M" && ins.Totals.Tensors == 0 {
					t.Errorf("inspection %d: %+v", i, ins)
				}
			}
			code, text, _ := ckptcheck(t, append(tt.args, dir)...)
			for _, v := range tt.variants {
				if !strings.Contains(text, "== "+dir+" [variant "+v+"]\n") {
					t.Errorf("text (exit %d) does not head %s's tensors:\n%s", code, v, text)
				}
			}
		})
	}
}

// A Hub repo of GGUF quantizations (hf://org/name-GGUF) is validated
// variant by variant as a local folder is, each input remote.
func TestGGUFVariantsRemote(t *testing.T) {
	hub, err := remotetest.NewHub()
	if err != nil {
		t.Fatal(err)
	}
	defer hub.Close()
	dir := writeGGUFVariants(t)
	truncateGGUF(t, dir, "tiny-Q8_0.gguf", "tiny-Q4_K_M.gguf", 200)
	commit := strings.Repeat("cd", 20)
	hub.Add("org/tiny-GGUF", &remotetest.Repo{Dir: dir, Commit: commit, Refs: map[string]string{"main": commit}})
	t.Setenv("HF_ENDPOINT", hub.URL)
	t.Setenv("HF_HUB_CACHE", t.TempDir())
	t.Setenv("HF_HUB_OFFLINE", "")
	t.Setenv("HF_TOKEN_PATH", filepath.Join(t.TempDir(), "none"))
	t.Setenv("HF_TOKEN", "")
	code, out, stderr := ckptcheck(t, "validate", "--format", "json", "hf://org/tiny-GGUF")
	var rep struct {
		Inputs []struct {
			Variant string
			Remote  *struct{ Kind string }
		}
		Findings []struct{ Code, File string }
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("exit %d: %v\n%s", code, err, stderr)
	}
	var variants []string
	for _, in := range rep.Inputs {
		variants = append(variants, in.Variant)
		if in.Remote == nil {
			t.Errorf("input %s is not remote", in.Variant)
		}
	}
	if code != 1 || !slices.Equal(variants, []string{"tiny-F32", "tiny-Q4_K_M", "tiny-Q8_0"}) || len(rep.Findings) != 1 || !strings.HasSuffix(rep.Findings[0].File, "/tiny-Q4_K_M.gguf") {
		t.Errorf("exit %d, inputs %q, findings %+v\n%s", code, variants, rep.Findings, stderr)
	}
}
