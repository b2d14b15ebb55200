package main

import (
	"encoding/binary"
	"math"
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
