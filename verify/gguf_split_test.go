package verify

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	w "github.com/ckptcheck/ckptcheck/internal/ggufwrite"
)

// splitGGUF writes f as gguf-split does: n files model-0000i-of-0000n.gguf,
// the metadata in the first, each with split.no, split.count and
// split.tensors.count, the tensors dealt out in order; skip leaves split
// skip (from 0) out, -1 none.
func splitGGUF(t *testing.T, f w.File, n, skip int) string {
	t.Helper()
	dir := t.TempDir()
	per := (len(f.Tensors) + n - 1) / n
	for i := range n {
		part := w.File{KV: []w.KV{w.P("split.no", w.U16(uint16(i))), w.P("split.count", w.U16(uint16(n))),
			w.P("split.tensors.count", w.I32(int32(len(f.Tensors))))}}
		if i == 0 {
			part.KV = append(slices.Clone(f.KV), part.KV...)
		}
		part.Tensors = f.Tensors[min(i*per, len(f.Tensors)):min((i+1)*per, len(f.Tensors))]
		if i != skip {
			must(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("model-%05d-of-%05d.gguf", i+1, n)), part.Bytes(), 0o644))
		}
	}
	return dir
}

// Split GGUF files are one checkpoint: validated together (the block count
// against the layers of all), diffed together; a split missing is
// gguf_split_missing, in validate and diff, and its tensors missing_key.
func TestGGUFSplit(t *testing.T) {
	ts := tinyLlama()
	pub := writeTinyHF(t, ts)
	tests := []struct {
		name     string
		skip     int
		validate []string // "code" of every error
		missing  int      // missing_key errors of the diff
	}{
		{"whole", -1, nil, 0},
		{"a split missing", 1, []string{"gguf_split_missing"}, 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			exp := splitGGUF(t, tinyGGUFOf(ts, ggufEdit{}), 3, tt.skip)
			fs, err := Validate(context.Background(), openCheckpoint(t, exp))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range fs {
				if f.Severity == Error {
					got = append(got, string(f.Code))
				}
			}
			if !slices.Equal(got, tt.validate) {
				t.Errorf("validate: %q, want %q", got, tt.validate)
				for _, f := range fs {
					t.Logf("%s %s %s: %s", f.Severity, f.Code, f.Key, f.Message)
				}
			}
			d := diffPaths(t, pub, exp, DiffOptions{WeightsOnly: true})
			rep, err := d.CompareValues(context.Background(), ValueOptions{})
			if err != nil {
				t.Fatal(err)
			}
			missing := 0
			for _, f := range append(slices.Clone(d.Findings), rep.Findings...) {
				switch {
				case f.Code == CodeMissingKey:
					missing++
				case f.Severity == Error && !slices.Contains(tt.validate, string(f.Code)):
					t.Errorf("diff: %s %s: %s", f.Code, f.Key, f.Message)
				}
			}
			if missing != tt.missing || rep.Compared != len(ts)-tt.missing || rep.Mismatched != 0 {
				t.Errorf("diff: %d missing (want %d), compared %d, mismatched %d", missing, tt.missing, rep.Compared, rep.Mismatched)
			}
		})
	}
}

func TestSplitName(t *testing.T) {
	for _, tt := range [][2]string{{"model-00001-of-00003.gguf", "model-00002-of-00003.gguf"}, {"odd.gguf", "split 2"}} {
		if got := splitName(tt[0], 1, 3); got != tt[1] {
			t.Errorf("splitName(%q) = %q, want %q", tt[0], got, tt[1])
		}
	}
}
