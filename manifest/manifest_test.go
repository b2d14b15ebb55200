package manifest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/checkpoint"
	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/internal/xxh3"
	"github.com/ckptcheck/ckptcheck/safetensors"
	"github.com/ckptcheck/ckptcheck/verify"
)

func manifestOf(t testing.TB, path string) *Manifest {
	t.Helper()
	c := openCheckpoint(t, path)
	files, err := Work(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	m, err := Build(context.Background(), c, files, Options{Tool: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// writeModel writes tensors as n shards (1: a single model.safetensors)
// with the tiny config and the given files beside them.
func writeModel(t *testing.T, tensors []fixture.Tensor, n int, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "m")
	if err := fixture.WriteModel(dir, tensors, n, files); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestBuildManifest(t *testing.T) {
	tensors := fixture.Tiny.Tensors(safetensors.BF16)
	dir := writeModel(t, tensors, 3, map[string]string{"tokenizer.json": `{"model": {}}`, "README.md": "not part of it"})
	m := manifestOf(t, dir)
	var kinds []string
	for _, f := range m.Files {
		kinds = append(kinds, f.Name+":"+f.Kind)
		b, _ := os.ReadFile(filepath.Join(dir, f.Name))
		if f.Size != int64(len(b)) || f.SHA256 != fmt.Sprintf("%x", sha256.Sum256(b)) {
			t.Errorf("%s: size %d sha256 %s", f.Name, f.Size, f.SHA256)
		}
	}
	want := []string{"config.json:config", "model-00001-of-00003.safetensors:shard", "model-00002-of-00003.safetensors:shard",
		"model-00003-of-00003.safetensors:shard", "model.safetensors.index.json:index", "tokenizer.json:tokenizer"}
	if !slices.Equal(kinds, want) {
		t.Errorf("files %v, want %v", kinds, want)
	}
	if len(m.Tensors) != len(tensors) {
		t.Fatalf("%d tensors, want %d", len(m.Tensors), len(tensors))
	}
	byName := map[string]fixture.Tensor{}
	for _, ts := range tensors {
		byName[ts.Name] = ts
	}
	for _, mt := range m.Tensors {
		ts := byName[mt.Name]
		if mt.DType != "BF16" || !slices.Equal(mt.Shape, ts.Shape) || mt.XXH3 != fmt.Sprintf("%016x", xxh3.Hash(ts.Data)) || !strings.HasPrefix(mt.File, "model-0000") {
			t.Errorf("%+v", mt)
		}
	}
	// The JSON form reads back the same.
	var buf bytes.Buffer
	if err := m.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	back, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, m) {
		t.Errorf("round trip:\n%+v\n%+v", back, m)
	}
	if m.Schema != Schema || m.Tool != "test" {
		t.Errorf("schema %q tool %q", m.Schema, m.Tool)
	}
}

// TestManifestPartitions builds a manifest from two disjoint halves of the
// work list, as partitioned runs do, and merges them.
func TestManifestPartitions(t *testing.T) {
	dir := writeModel(t, fixture.Tiny.Tensors(safetensors.BF16), 3, nil)
	c := openCheckpoint(t, dir)
	ctx := context.Background()
	files, err := Work(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	var parts []*Manifest
	for i := range 2 {
		var mine []checkpoint.FileInfo
		for k, f := range files {
			if k%2 == i {
				mine = append(mine, f)
			}
		}
		m, err := Build(ctx, c, mine, Options{Tool: "test"})
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, m)
	}
	merged, err := Merge(parts...)
	if err != nil {
		t.Fatal(err)
	}
	if whole := manifestOf(t, dir); !reflect.DeepEqual(merged, whole) {
		t.Errorf("merged parts differ from the whole:\n%+v\n%+v", merged, whole)
	}
	if _, err := Merge(parts[0], parts[0]); err == nil {
		t.Error("a file in two parts must be an error")
	}
}

func TestCompareManifest(t *testing.T) {
	tensors := fixture.Tiny.Tensors(safetensors.BF16)
	tok := map[string]string{"tokenizer.json": `{"model": {}}`}
	recorded := manifestOf(t, writeModel(t, tensors, 3, tok))
	edit := func(name string, f func(fixture.Tensor) fixture.Tensor) []fixture.Tensor {
		out := slices.Clone(tensors)
		for i := range out {
			if out[i].Name == name {
				out[i] = f(out[i])
			}
		}
		return out
	}
	norm := "model.norm.weight"
	tests := []struct {
		name string
		dir  func(t *testing.T) string
		want []string // "severity code key-or-file"
	}{
		{"identical", func(t *testing.T) string { return writeModel(t, tensors, 3, tok) }, nil},
		{"re-sharded into 2", func(t *testing.T) string { return writeModel(t, tensors, 2, tok) },
			[]string{"info manifest_shards_differ m"}},
		{"one file, no index", func(t *testing.T) string { return writeModel(t, tensors, 1, tok) },
			[]string{"info manifest_shards_differ m"}},
		{"a tensor's bytes changed", func(t *testing.T) string {
			return writeModel(t, edit(norm, func(ts fixture.Tensor) fixture.Tensor {
				return fixture.Perturb(ts, safetensors.BF16, 0.1, 1)
			}), 3, tok)
		}, []string{"error manifest_mismatch " + norm}},
		{"a tensor upcast", func(t *testing.T) string { return writeModel(t, edit(norm, fixture.Upcast), 3, tok) },
			[]string{"error manifest_mismatch " + norm}},
		{"a tensor lost, one added", func(t *testing.T) string {
			ts := edit(norm, func(ts fixture.Tensor) fixture.Tensor { ts.Name = "model.extra.weight"; return ts })
			return writeModel(t, ts, 3, tok)
		}, []string{"error manifest_extra model.extra.weight", "error manifest_missing " + norm}},
		{"config changed, tokenizer lost, a file added", func(t *testing.T) string {
			return writeModel(t, tensors, 3, map[string]string{"config.json": `{"model_type": "qwen3"}`, "generation_config.json": `{}`})
		}, []string{"error manifest_extra generation_config.json", "error manifest_mismatch config.json", "error manifest_missing tokenizer.json"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := tt.dir(t)
			var got []string
			for _, f := range Compare(recorded, manifestOf(t, dir), checkpoint.Dir(dir).Path) {
				where := f.Key
				if where == "" {
					where = filepath.Base(f.File)
				}
				got = append(got, fmt.Sprintf("%s %s %s", f.Severity, f.Code, where))
				if f.Code == verify.CodeManifestMismatch && f.Key == norm && !strings.Contains(f.Message, "BF16 → F32") && !strings.Contains(f.Message, "bytes differ") {
					t.Errorf("message %q", f.Message)
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("findings\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(tt.want, "\n  "))
			}
		})
	}
}

func TestReadManifestErrors(t *testing.T) {
	sha := strings.Repeat("a", 64)
	file := func(name, hash string) string {
		return fmt.Sprintf(`{"name": %q, "kind": "shard", "size": 1, "sha256": %q}`, name, hash)
	}
	tensor := func(name, dtype, xxh string) string {
		return fmt.Sprintf(`{"name": %q, "dtype": %q, "shape": [1], "xxh3": %q, "file": "a"}`, name, dtype, xxh)
	}
	doc := func(files, tensors string) string {
		return `{"schema": "ckptcheck.manifest/v1", "tool": "t", "files": [` + files + `], "tensors": [` + tensors + `]}`
	}
	tests := []struct{ in, want string }{
		{`not json`, "not a ckptcheck manifest"},
		{`{"schema": "ckptcheck.report/v1"}`, `schema "ckptcheck.report/v1"`},
		{doc(file("a", "xyz"), ""), "not 64 hex digits"},
		{doc(file("a", sha)+","+file("a", sha), ""), "listed twice"},
		{doc(file("", sha), ""), "no name"},
		{doc("", tensor("w", "BF17", "0123456789abcdef")), `unknown dtype "BF17"`},
		{doc("", tensor("w", "BF16", "0123")), "not 16 hex digits"},
		{doc("", tensor("w", "BF16", "0123456789abcdef")+","+tensor("w", "BF16", "0123456789abcdef")), "listed twice"},
		{doc("", "") + " {}", "more than one JSON value"},
		{`{"schema": "ckptcheck.manifest/v1", "files": {}}`, "not a ckptcheck manifest"},
	}
	for _, tt := range tests {
		_, err := Read(strings.NewReader(tt.in))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%.60s: %v, want %q", tt.in, err, tt.want)
		}
	}
	if _, err := Read(strings.NewReader(doc(file("a", strings.ToUpper(sha)), tensor("w", "BF16", "0123456789ABCDEF")))); err != nil {
		t.Errorf("upper-case hex is fine: %v", err)
	}
}

func FuzzReadManifest(f *testing.F) {
	f.Add([]byte(`{"schema": "ckptcheck.manifest/v1", "tool": "t", "files": [{"name": "a", "kind": "shard", "size": 1, "sha256": "` + strings.Repeat("0", 64) + `"}], "tensors": [{"name": "w", "dtype": "F32", "shape": [], "xxh3": "0000000000000000", "file": "a"}]}`))
	f.Add([]byte(`{"schema": "ckptcheck.manifest/v1"}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Read(bytes.NewReader(b))
		if err != nil {
			if m != nil {
				t.Fatal("a manifest with an error")
			}
			return
		}
		// What reads must write and read back the same.
		var buf bytes.Buffer
		if err := m.WriteJSON(&buf); err != nil {
			t.Fatal(err)
		}
		again, err := Read(&buf)
		if err != nil {
			t.Fatalf("re-reading: %v", err)
		}
		if len(again.Files) != len(m.Files) || len(again.Tensors) != len(m.Tensors) {
			t.Fatal("round trip lost entries")
		}
		Compare(m, again, checkpoint.Dir(".").Path)
	})
}

func openCheckpoint(t testing.TB, path string) *checkpoint.Checkpoint {
	t.Helper()
	c, err := checkpoint.Open(context.Background(), path, checkpoint.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
