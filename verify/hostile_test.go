package verify

import (
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
)

// work counts what a diff built: the work its headers can cause, which must
// be bounded by what the files hold, whatever numbers they carry.
type work struct {
	logical, segments, findings int
}

func countWork(d *Comparison) work {
	w := work{findings: len(d.Findings)}
	for _, m := range []*Mapped{d.Published, d.Exported} {
		w.logical += len(m.View.Tensors)
		for _, t := range m.View.Tensors {
			w.segments += len(t.Segments)
		}
	}
	return w
}

// rawFile writes a file with the given header and data bytes, bypassing the
// writer (hostile files are not what the writer makes).
func rawFile(t *testing.T, path, header string, data int) {
	t.Helper()
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	b = append(append(b, header...), make([]byte, data)...)
	os.MkdirAll(filepath.Dir(path), 0o755)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestHostileExportsBounded reproduces the hostile inputs of the hardening
// issue: tiny files whose headers ask for huge amounts of work. Each must
// stay within a budget set by the published side and the files' sizes.
func TestHostileExportsBounded(t *testing.T) {
	q := fixture.TinyMoE
	pub := writePublished(t, q, nil)
	pubTensors := len(q.Specs())
	tests := []struct {
		name   string
		header string
		data   int
		config string
	}{
		{"stacked experts of zero bytes", fixture.StackedZeroHeader(1), 0, ""},
		{"100 layers of them", fixture.StackedZeroHeader(100), 0, ""},
		{"an invalid file of permuted rows", fixture.PermutedRowsHeader(), 16, ""},
		{"a layer count of 2^64-1", fixture.StackedZeroHeader(1), 0, `{"model_type":"qwen3_moe","num_hidden_layers":18446744073709551615}`},
		{"numbers of every kind", fixture.StackedZeroHeader(2), 0, `{"model_type":"qwen3_moe","num_hidden_layers":-1,"num_attention_heads":0,"hidden_size":2.5,"num_key_value_heads":"4","head_dim":null,"vocab_size":1e300}`},
	}
	for _, tt := range tests {
		dir := filepath.Join(t.TempDir(), "exported")
		rawFile(t, filepath.Join(dir, "model.safetensors"), tt.header, tt.data)
		if tt.config != "" {
			os.WriteFile(filepath.Join(dir, "config.json"), []byte(tt.config), 0o644)
		}
		if size := len(tt.header) + len(tt.config); size > 1<<20 {
			t.Fatalf("%s: %d bytes; the bound is stated for inputs up to 1 MB", tt.name, size)
		}
		d := diffPaths(t, pub, dir, DiffOptions{})
		w := countWork(d)
		t.Logf("%s: %+v", tt.name, w)
		// The export's logical tensors are capped by what could match; the
		// findings by the tensors on both sides.
		if w.logical > pubTensors+2*pubTensors+1024 || w.segments > 4*w.logical+1024 || w.findings > 3*(pubTensors+2*pubTensors+1024) {
			t.Errorf("%s: %+v beyond the bound for %d published tensors", tt.name, w, pubTensors)
		}
		if _, err := d.CompareValues(context.Background(), ValueOptions{}); err != nil {
			t.Errorf("%s: values: %v", tt.name, err)
		}
		for _, p := range []string{dir, pub} {
			if _, err := Validate(context.Background(), openCheckpoint(t, p)); err != nil {
				t.Errorf("%s: validate: %v", tt.name, err)
			}
		}
	}
}

// TestDiffCancels: a cancelled context stops a diff before it builds views.
func TestDiffCancels(t *testing.T) {
	pub := published(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p, e := openCheckpoint(t, pub), openCheckpoint(t, pub)
	if _, err := Diff(ctx, p, e, DiffOptions{}); err == nil {
		t.Error("a cancelled diff must return an error")
	}
	if _, err := Validate(ctx, p); err == nil {
		t.Error("a cancelled validation must return an error")
	}
}
