package checkpoint

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/gguf"
	w "github.com/ckptcheck/ckptcheck/internal/ggufwrite"
)

// A .gguf file is one checkpoint, read through the tensorfile registry,
// whether given as the file or as its folder.
func TestOpenGGUF(t *testing.T) {
	dir := t.TempDir()
	f := w.File{KV: []w.KV{w.P("general.architecture", w.Str("qwen3"))},
		Tensors: []w.Tensor{{Name: "output_norm.weight", Dims: []uint64{8}, Type: uint32(gguf.TypeF32), Data: make([]byte, 32)}}}
	path := filepath.Join(dir, "model-Q8_0.gguf")
	if err := os.WriteFile(path, f.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, dir} {
		c, err := Open(context.Background(), p, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Shards) != 1 || c.Shards[0].Status != ShardOK || c.Shards[0].Format.Name() != gguf.Name || c.NumTensors() != 1 {
			t.Errorf("%s: %d shards, %+v", p, len(c.Shards), c.Shards[0])
		}
		if h, ok := c.Shards[0].Header.(*gguf.File); !ok || h.Architecture() != "qwen3" {
			t.Errorf("%s: header %T", p, c.Shards[0].Header)
		}
		c.Close()
	}
}

// writeGGUFs writes a one-tensor GGUF file of each name into a new folder.
func writeGGUFs(t *testing.T, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, n := range names {
		f := w.File{KV: []w.KV{w.P("general.architecture", w.Str("qwen3"))},
			Tensors: []w.Tensor{{Name: "output_norm.weight", Dims: []uint64{8}, Type: uint32(gguf.TypeF32), Data: make([]byte, 32)}}}
		if err := os.WriteFile(filepath.Join(dir, n), f.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// A folder of several GGUF quantizations is several checkpoints: without
// --variant it is a usage error listing them; --variant picks one by its
// quantization tag (any case), its stem or a file's name; split files of
// one quantization stay one checkpoint.
func TestOpenGGUFVariants(t *testing.T) {
	names := []string{"Qwen3-8B-Q4_K_M.gguf", "Qwen3-8B-Q8_0-00001-of-00002.gguf", "Qwen3-8B-Q8_0-00002-of-00002.gguf", "mmproj-F16.gguf", "Qwen3-8B-F16.gguf"}
	dir := writeGGUFs(t, names...)
	for _, tt := range []struct {
		variant, want string
		shards        int
		err           string
	}{
		{"", "", 0, "holds 4 GGUF checkpoints, one per quantization: choose one with --variant (F16: Qwen3-8B-F16.gguf, Q4_K_M: Qwen3-8B-Q4_K_M.gguf, Q8_0: Qwen3-8B-Q8_0-00001-of-00002.gguf … (2 files), F16: mmproj-F16.gguf)"},
		{"Q8_0", "Qwen3-8B-Q8_0", 2, ""},
		{"q4_k_m", "Qwen3-8B-Q4_K_M", 1, ""},
		{"Qwen3-8B-Q8_0", "Qwen3-8B-Q8_0", 2, ""},
		{"Qwen3-8B-Q8_0-00002-of-00002.gguf", "Qwen3-8B-Q8_0", 2, ""},
		{"mmproj-F16.gguf", "mmproj-F16", 1, ""},
		{"F16", "", 0, "--variant F16 matches several GGUF checkpoints, give a file name: F16: Qwen3-8B-F16.gguf, F16: mmproj-F16.gguf"},
		{"Q6_K", "", 0, "no Q6_K variant (variants here: F16: Qwen3-8B-F16.gguf, "},
	} {
		c, err := Open(context.Background(), dir, Options{Variant: tt.variant})
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("--variant %q: error %v, want %q", tt.variant, err, tt.err)
			}
			if c != nil {
				c.Close()
			}
			continue
		}
		if err != nil {
			t.Errorf("--variant %q: %v", tt.variant, err)
			continue
		}
		if c.Variant != tt.want || len(c.Shards) != tt.shards || len(c.Variants) != 3 {
			t.Errorf("--variant %q: variant %q with %d shards (others %v), want %q with %d", tt.variant, c.Variant, len(c.Shards), c.Variants, tt.want, tt.shards)
		}
		c.Close()
	}
	// The error lists the checkpoints, a set of splits as one, each a
	// --variant that opens it: what validate and inspect take in turn.
	_, err := Open(context.Background(), dir, Options{})
	var several *VariantsError
	if !errors.As(err, &several) || several.Path != dir {
		t.Fatalf("no --variant: %v, want a *VariantsError of %s", err, dir)
	}
	shards := map[string]int{"Qwen3-8B-F16": 1, "Qwen3-8B-Q4_K_M": 1, "Qwen3-8B-Q8_0": 2, "mmproj-F16": 1}
	if !slices.Equal(several.Variants, slices.Sorted(maps.Keys(shards))) {
		t.Errorf("variants %q, want %v", several.Variants, slices.Sorted(maps.Keys(shards)))
	}
	for _, v := range several.Variants {
		c, err := Open(context.Background(), dir, Options{Variant: v})
		if err != nil {
			t.Errorf("--variant %s: %v", v, err)
			continue
		}
		if c.Variant != v || len(c.Shards) != shards[v] {
			t.Errorf("--variant %s: variant %q with %d shards, want %d", v, c.Variant, len(c.Shards), shards[v])
		}
		c.Close()
	}
	// One quantization, split or not, is the folder's plain checkpoint.
	for _, one := range [][]string{{"model-Q8_0.gguf"}, {"m-00001-of-00002.gguf", "m-00002-of-00002.gguf"}} {
		c, err := Open(context.Background(), writeGGUFs(t, one...), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if c.Variant != "" || len(c.Variants) != 0 || len(c.Shards) != len(one) {
			t.Errorf("%v: variant %q, others %v, %d shards", one, c.Variant, c.Variants, len(c.Shards))
		}
		c.Close()
	}
}

func TestGGUFQuantization(t *testing.T) {
	for stem, want := range map[string]string{
		"Qwen3-8B-Q4_K_M": "Q4_K_M", "llama-2-7b.Q8_0": "Q8_0", "gemma-UD-Q4_K_XL": "Q4_K_XL", "m-IQ4_XS": "IQ4_XS",
		"m-bf16": "bf16", "gpt-oss-MXFP4_MOE": "MXFP4_MOE", "m-TQ1_0": "TQ1_0", "model": "", "Qwen3-8B": "", "m-instruct": "",
	} {
		if got := ggufQuantization(stem); got != want {
			t.Errorf("ggufQuantization(%q) = %q, want %q", stem, got, want)
		}
	}
}
