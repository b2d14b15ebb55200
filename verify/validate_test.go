package verify

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/checkpoint"
	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// published writes the tiny Qwen3 fixture as 3 BF16 shards with an index
// and config, and returns its directory.
func published(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "published")
	if err := fixture.WritePublished(dir, fixture.Tiny); err != nil {
		t.Fatal(err)
	}
	return dir
}

func validatePath(t *testing.T, path string) []Finding {
	t.Helper()
	fs, err := Validate(context.Background(), openCheckpoint(t, path))
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

// openCheckpoint opens a checkpoint, closed when the test ends.
func openCheckpoint(t testing.TB, path string) *checkpoint.Checkpoint {
	t.Helper()
	c, err := checkpoint.Open(context.Background(), path, checkpoint.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// must fails the test on an error of its setup.
func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func codeList(fs []Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, string(f.Code))
	}
	slices.Sort(out)
	return out
}

func editIndex(t *testing.T, dir string, edit func(wm map[string]any, meta map[string]any)) {
	t.Helper()
	idx := map[string]any{}
	b, err := os.ReadFile(filepath.Join(dir, "model.safetensors.index.json"))
	must(t, err)
	if err := json.Unmarshal(b, &idx); err != nil {
		t.Fatal(err)
	}
	edit(idx["weight_map"].(map[string]any), idx["metadata"].(map[string]any))
	if err := fixture.WriteJSON(filepath.Join(dir, "model.safetensors.index.json"), idx); err != nil {
		t.Fatal(err)
	}
}

func TestValidateCheckpoints(t *testing.T) {
	const shard1 = "model-00001-of-00003.safetensors"
	const shard2 = "model-00002-of-00003.safetensors"
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string)
		want  []string
	}{
		{"healthy", func(*testing.T, string) {}, nil},
		{"missing shard", func(t *testing.T, dir string) { must(t, os.Remove(filepath.Join(dir, shard2))) },
			[]string{"index_missing_shard"}},
		{"unsafe paths", func(t *testing.T, dir string) {
			editIndex(t, dir, func(wm, _ map[string]any) {
				wm["a"] = "../outside.safetensors"
				wm["b"] = "/etc/passwd.safetensors"
				wm["c"] = "flax_model.msgpack"
			})
		}, []string{"index_unsafe_path", "index_unsafe_path", "index_unsafe_path"}},
		{"key not in shard", func(t *testing.T, dir string) {
			editIndex(t, dir, func(wm, _ map[string]any) { wm["ghost.weight"] = shard1 })
		}, []string{"index_key_not_in_shard"}},
		{"shard key not in index", func(t *testing.T, dir string) {
			editIndex(t, dir, func(wm, _ map[string]any) { delete(wm, "model.norm.weight") })
		}, []string{"shard_key_not_in_index"}},
		{"duplicate across shards", func(t *testing.T, dir string) {
			f, err := safetensors.Open(filepath.Join(dir, shard1))
			must(t, err)
			defer f.Close()
			first := f.Tensor("model.embed_tokens.weight")
			if first == nil {
				t.Fatalf("%s holds no model.embed_tokens.weight", shard1)
			}
			data, err := io.ReadAll(first.Open())
			must(t, err)
			must(t, fixture.WriteFile(filepath.Join(dir, "model-00004-of-00003.safetensors"), []fixture.Tensor{{Name: first.Name, DType: first.DType, Shape: first.Shape, Data: data}}, nil))
			editIndex(t, dir, func(wm, _ map[string]any) { wm["z"] = "model-00004-of-00003.safetensors" })
		}, []string{"duplicate_key_across_shards", "index_key_not_in_shard", "index_total_size_mismatch", "shard_key_not_in_index"}},
		{"total size", func(t *testing.T, dir string) {
			editIndex(t, dir, func(_, meta map[string]any) { meta["total_size"] = 12 })
		}, []string{"index_total_size_mismatch"}},
		{"unreferenced shard", func(t *testing.T, dir string) {
			must(t, fixture.WriteFile(filepath.Join(dir, "consolidated.safetensors"), nil, nil))
		}, []string{"unreferenced_shard"}},
		{"unreferenced shards beyond the listed", func(t *testing.T, dir string) {
			for i := range maxUnreferencedListed + 5 {
				must(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("stray-%03d.safetensors", i)), nil, 0o644))
			}
		}, slices.Repeat([]string{"unreferenced_shard"}, maxUnreferencedListed+1)},
		{"index not json", func(t *testing.T, dir string) {
			must(t, os.WriteFile(filepath.Join(dir, "model.safetensors.index.json"), []byte("{"), 0o644))
		}, []string{"index_invalid"}},
		{"index without weight_map", func(t *testing.T, dir string) {
			must(t, os.WriteFile(filepath.Join(dir, "model.safetensors.index.json"), []byte(`{"metadata":{}}`), 0o644))
		}, []string{"index_invalid"}},
		{"truncated shard", func(t *testing.T, dir string) {
			resize(t, filepath.Join(dir, shard2), -3)
		}, []string{"metadata_incomplete_buffer"}},
		{"lfs pointer", func(t *testing.T, dir string) {
			must(t, os.WriteFile(filepath.Join(dir, shard2), []byte("version https://git-lfs.github.com/spec/v1\noid sha256:4d7a\nsize 1024\n"), 0o644))
		}, []string{"header_too_large"}},
		{"config fields over the cap", func(t *testing.T, dir string) {
			cfg := fixture.Tiny.Config("bfloat16")
			for i := range checkpoint.MaxConfigFields {
				cfg[fmt.Sprintf("extra_%d", i)] = i
			}
			must(t, fixture.WriteJSON(filepath.Join(dir, "config.json"), cfg))
		}, []string{"config_invalid"}},
		{"config vocab", func(t *testing.T, dir string) {
			cfg := fixture.Tiny.Config("bfloat16")
			cfg["vocab_size"] = 1000
			must(t, fixture.WriteJSON(filepath.Join(dir, "config.json"), cfg))
		}, []string{"config_mismatch"}},
		{"config layers", func(t *testing.T, dir string) {
			cfg := fixture.Tiny.Config("bfloat16")
			cfg["num_hidden_layers"] = 3
			must(t, fixture.WriteJSON(filepath.Join(dir, "config.json"), cfg))
		}, []string{"config_mismatch"}},
		{"config layers missing", func(t *testing.T, dir string) {
			cfg := fixture.Tiny.Config("bfloat16")
			cfg["num_hidden_layers"] = 6
			must(t, fixture.WriteJSON(filepath.Join(dir, "config.json"), cfg))
		}, []string{"config_mismatch"}},
		{"config dtype", func(t *testing.T, dir string) {
			must(t, fixture.WriteJSON(filepath.Join(dir, "config.json"), fixture.Tiny.Config("float32")))
		}, []string{"config_mismatch"}},
		{"config not json", func(t *testing.T, dir string) {
			must(t, os.WriteFile(filepath.Join(dir, "config.json"), []byte("nope"), 0o644))
		}, []string{"config_invalid"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := published(t)
			tt.setup(t, dir)
			got := validatePath(t, dir)
			if !slices.Equal(codeList(got), tt.want) {
				t.Errorf("codes = %v, want %v\n%v", codeList(got), tt.want, got)
			}
			for _, f := range got {
				if f.Message == "" || strings.Contains(f.Message, "\n") {
					t.Errorf("finding %v: message must be one line", f)
				}
			}
		})
	}
}

func TestValidateLFSMessage(t *testing.T) {
	p := filepath.Join(t.TempDir(), "model.safetensors")
	must(t, os.WriteFile(p, []byte("version https://git-lfs.github.com/spec/v1\noid sha256:4d7a\nsize 1024\n"), 0o644))
	got := validatePath(t, p)
	if len(got) != 1 || !strings.Contains(got[0].Message, "Git LFS pointer") {
		t.Errorf("got %v", got)
	}
}

func TestValidateWarnings(t *testing.T) {
	dir := t.TempDir()
	write := func(name, header string, data int) string {
		if !strings.HasPrefix(name, "unpadded") {
			header += strings.Repeat(" ", (8-len(header)%8)%8)
		}
		b := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
		b = append(append(b, header...), make([]byte, data)...)
		p := filepath.Join(dir, name)
		must(t, os.WriteFile(p, b, 0o644))
		return p
	}
	tests := []struct {
		path string
		want []string
	}{
		{write("dup.safetensors", `{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"U8","shape":[8],"data_offsets":[0,8]}}`, 8),
			[]string{"duplicate_key"}},
		{write("unpadded.safetensors", `{"a":{"dtype":"U8","shape":[8],"data_offsets":[0,8]}}`, 8), []string{"unaligned_data"}},
		{write("misaligned.safetensors", `{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"b":{"dtype":"F32","shape":[1],"data_offsets":[1,5]}}`, 5),
			[]string{"unaligned_data"}},
		{write("unpadded-truncated.safetensors", `{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}`, 2), []string{"metadata_incomplete_buffer", "unaligned_data"}},
	}
	for _, tt := range tests {
		if got := codeList(validatePath(t, tt.path)); !slices.Equal(got, tt.want) {
			t.Errorf("%s: %v, want %v", filepath.Base(tt.path), got, tt.want)
		}
	}
}

func TestValidateRealFiles(t *testing.T) {
	root := filepath.Join("..", "..", "shared", "realdata")
	if _, err := os.Stat(root); err != nil {
		t.Skipf("real third-party files not found at %s (present in CI)", root)
	}
	n := 0
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(p) != ".safetensors" {
			return err
		}
		n++
		if got := validatePath(t, p); len(got) > 0 {
			t.Errorf("%s: %v", p, got)
		}
		return nil
	})
	if n == 0 {
		t.Fatal("no real files")
	}
}

func TestFormatCodesAreTheReferenceKinds(t *testing.T) {
	docs := Codes()
	kinds := safetensors.ErrorKinds()
	if len(docs) < len(kinds) {
		t.Fatalf("%d codes, fewer than the %d format error kinds", len(docs), len(kinds))
	}
	for i, k := range kinds {
		if docs[i].Code != FormatCode(k) {
			t.Errorf("code %d is %s, want the reference kind %s", i, docs[i].Code, k)
		}
	}
	docs[0].Doc = "changed"
	if Codes()[0].Doc == "changed" {
		t.Error("Codes must return a copy")
	}
}

func TestIgnores(t *testing.T) {
	fs := []Finding{
		{Code: CodeMissingKey, Key: "model.layers.0.a"},
		{Code: CodeMissingKey, Key: "model.norm.weight"},
		{Code: CodeDTypeMismatch, Key: "x"},
		{Code: CodeUnchanged, Keys: []string{"model.layers.1.a", "model.layers.2.a", "b"}},
	}
	all := []string{"model.layers.1.a", "model.layers.2.a", "b"}
	tests := []struct {
		specs     []string
		kept      int
		ignored   int
		unchanged []string // the keys of the unchanged finding kept
	}{
		{nil, 4, 0, all},
		{[]string{"dtype_mismatch"}, 3, 1, all},
		{[]string{"missing_key=model.layers.*"}, 3, 1, all},
		{[]string{"missing_key=*", "unchanged"}, 1, 3, nil},
		{[]string{"unchanged=model.layers.*"}, 4, 2, []string{"b"}},
		{[]string{"unchanged=*"}, 3, 3, nil},
	}
	for _, tt := range tests {
		var igs []Ignore
		for _, s := range tt.specs {
			ig, err := ParseIgnore(s)
			if err != nil {
				t.Fatal(err)
			}
			igs = append(igs, ig)
		}
		kept, ignored := ApplyIgnores(fs, igs)
		if len(kept) != tt.kept || ignored != tt.ignored {
			t.Errorf("%v: kept %d, ignored %d; want %d, %d", tt.specs, len(kept), ignored, tt.kept, tt.ignored)
		}
		var unchanged []string
		for _, f := range kept {
			if f.Code == CodeUnchanged {
				unchanged = f.Keys
			}
		}
		if !slices.Equal(unchanged, tt.unchanged) {
			t.Errorf("%v: unchanged keys %v, want %v", tt.specs, unchanged, tt.unchanged)
		}
	}
	if len(fs[3].Keys) != 3 {
		t.Error("ApplyIgnores changed its input")
	}
	for _, bad := range []string{"missing_keys", "", "missing_key="} {
		if _, err := ParseIgnore(bad); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
}

// TestConfigDTypeSize: an F32 export whose config says bfloat16 is twice
// the size it claims; --weights-only leaves the export's config alone.
func TestConfigDTypeSize(t *testing.T) {
	tests := []struct {
		stored safetensors.DType
		config string
		want   string
		// diff against the published (bfloat16) checkpoint: config_mismatch,
		// and config_changed when the export's config says another dtype.
		inDiff int
	}{
		{safetensors.F32, "bfloat16", "config.json says bfloat16 but most parameters are stored as F32: the checkpoint is twice the size its config claims (165,248 bytes of parameters, not 82,624)", 1},
		{safetensors.BF16, "float32", "config.json says float32 but most parameters are stored as BF16: the checkpoint is half the size its config claims", 2},
	}
	for _, tt := range tests {
		ts := fixture.Tiny.Tensors(safetensors.BF16)
		if tt.stored == safetensors.F32 {
			ts = upcastAll(ts)
		}
		dir := export(t, ts, fixture.Tiny.Config(tt.config))
		var got []Finding
		for _, f := range validatePath(t, dir) {
			if f.Code == CodeConfigMismatch {
				got = append(got, f)
			}
		}
		if len(got) != 1 || !strings.HasPrefix(got[0].Message, tt.want) || got[0].Key != "dtype" {
			t.Errorf("%v", got)
		}
		for _, weightsOnly := range []bool{false, true} {
			d := diffPaths(t, published(t), dir, DiffOptions{WeightsOnly: weightsOnly})
			n := 0
			for _, f := range d.Findings {
				if f.Code == CodeConfigMismatch || f.Code == CodeConfigChanged {
					n++
				}
			}
			if want := map[bool]int{false: tt.inDiff, true: 0}[weightsOnly]; n != want {
				t.Errorf("weights only %v: %d config findings, want %d: %v", weightsOnly, n, want, d.Findings)
			}
		}
	}
}

// TestUnreferencedSummary: beyond maxUnreferencedListed stray files, one
// finding says how many more there are, and the listed are the first by name.
func TestUnreferencedSummary(t *testing.T) {
	for _, n := range []int{maxUnreferencedListed, maxUnreferencedListed + 1, 1000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			dir := published(t)
			for i := range n {
				must(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("stray-%04d.safetensors", i)), nil, 0o644))
			}
			var got []Finding
			for _, f := range validatePath(t, dir) {
				if f.Code == CodeUnreferencedShard {
					got = append(got, f)
				}
			}
			listed := min(n, maxUnreferencedListed)
			want := listed
			if n > listed {
				want++
			}
			if len(got) != want {
				t.Fatalf("%d stray files: %d unreferenced_shard findings, want %d", n, len(got), want)
			}
			if first := filepath.Base(got[0].File); first != "stray-0000.safetensors" {
				t.Errorf("first listed is %s, want stray-0000.safetensors", first)
			}
			if n == listed {
				return
			}
			last := got[len(got)-1]
			if wantMsg := fmt.Sprintf("and %d more", n-listed); !strings.Contains(last.Message, wantMsg) || last.File != dir {
				t.Errorf("summary finding %q on %s, want %q on %s", last.Message, last.File, wantMsg, dir)
			}
		})
	}
}
