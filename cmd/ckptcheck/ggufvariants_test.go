package main

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
	w "github.com/ckptcheck/ckptcheck/internal/ggufwrite"
)

// appendF32 "quantizes" to GGML's F32: the values as they are.
func appendF32(dst []byte, x []float32) []byte {
	for _, v := range x {
		dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(v))
	}
	return dst
}

// A folder of GGUF files of two quantizations (a Hub repo's Q8_0 and F32)
// is two checkpoints: without --variant every command says to choose one
// (exit 2) and lists them; --variant picks one by its quantization tag, in
// any case, or by its file name.
func TestGGUFVariants(t *testing.T) {
	dir := t.TempDir()
	if err := w.WriteQwen3(filepath.Join(dir, "tiny-Q8_0.gguf"), fixture.Tiny, 8, 7, w.AppendQ8_0); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteQwen3(filepath.Join(dir, "tiny-F32.gguf"), fixture.Tiny, 0, 0, appendF32); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"validate", dir}, {"inspect", dir}, {"diff", "../../testdata/published", dir}} {
		code, _, stderr := ckptcheck(t, args...)
		if code != 2 || !strings.Contains(stderr, "holds 2 GGUF checkpoints, one per quantization: choose one with --variant (F32: tiny-F32.gguf, Q8_0: tiny-Q8_0.gguf)") {
			t.Errorf("%s without --variant: exit %d\n%s", args[0], code, stderr)
		}
	}
	for _, variant := range []string{"q8_0", "tiny-Q8_0.gguf", "F32"} {
		code, out, stderr := ckptcheck(t, "diff", "../../testdata/published", dir, "--variant", variant, "--values")
		if code != 0 || !strings.Contains(out, "variant tiny-") {
			t.Errorf("diff --variant %s: exit %d\n%s%s", variant, code, out, stderr)
		}
	}
	code, out, stderr := ckptcheck(t, "validate", dir, "--variant", "Q8_0", "--format", "json")
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
