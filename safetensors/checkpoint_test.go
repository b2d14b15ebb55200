package safetensors

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func writeFile(t *testing.T, path string, tensors []Tensor) {
	t.Helper()
	var buf bytes.Buffer
	if err := Write(&buf, tensors, map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func vec(name string, n int) Tensor {
	return Tensor{Name: name, DType: F32, Shape: []uint64{uint64(n)}, Data: make([]byte, 4*n)}
}

func TestOpenCheckpointForms(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.safetensors"), []Tensor{vec("x", 2)})
	writeFile(t, filepath.Join(dir, "b.safetensors"), []Tensor{vec("y", 3)})
	index := `{"metadata":{"total_size":20},"weight_map":{"x":"a.safetensors","y":"b.safetensors"}}`
	os.WriteFile(filepath.Join(dir, "model.safetensors.index.json"), []byte(index), 0o644)
	os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"model_type":"qwen3","tie_word_embeddings":true,"torch_dtype":"bfloat16","text_config":{"vocab_size":7}}`), 0o644)

	for _, p := range []string{dir, filepath.Join(dir, "model.safetensors.index.json")} {
		c, err := OpenCheckpoint(p)
		if err != nil {
			t.Fatal(err)
		}
		if c.Index == nil || c.Index.Err != nil || len(c.Shards) != 2 || c.NumTensors() != 2 || *c.Index.TotalSize != 20 {
			t.Errorf("%s: %+v", p, c)
		}
		if c.Config == nil || c.Config.ModelType != "qwen3" || c.Config.TieWordEmbeddings == nil || !*c.Config.TieWordEmbeddings || c.Config.VocabSize != 7 || c.Config.DType != "bfloat16" {
			t.Errorf("config = %+v", c.Config)
		}
		c.Close()
	}
	c, err := OpenCheckpoint(filepath.Join(dir, "a.safetensors"))
	if err != nil || len(c.Shards) != 1 || c.Index != nil || c.NumTensors() != 1 {
		t.Errorf("single file: %+v, %v", c, err)
	}
	if _, err := OpenCheckpoint(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing path must be an error")
	}
	if _, err := OpenCheckpoint(t.TempDir()); err == nil {
		t.Error("an empty directory must be an error")
	}
}

func TestOpenCheckpointHubCache(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("HF_HUB_CACHE", cache)
	repo := filepath.Join(cache, "models--org--tiny")
	blob := filepath.Join(repo, "blobs", "0123abcd")
	writeFile(t, blob, []Tensor{vec("w", 1)})
	snap := filepath.Join(repo, "snapshots", "c0ffee")
	os.MkdirAll(snap, 0o755)
	if err := os.Symlink(filepath.Join("..", "..", "blobs", "0123abcd"), filepath.Join(snap, "model.safetensors")); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(repo, "refs"), 0o755)
	os.WriteFile(filepath.Join(repo, "refs", "main"), []byte("c0ffee\n"), 0o644)

	for _, id := range []string{"org/tiny", "org/tiny@main", "org/tiny@c0ffee"} {
		c, err := OpenCheckpoint(id)
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		if c.Path != snap || c.NumTensors() != 1 || c.Shards[0].Err != nil {
			t.Errorf("%s: path %s, %d tensors, err %v", id, c.Path, c.NumTensors(), c.Shards[0].Err)
		}
		c.Close()
	}
	for _, id := range []string{"org/other", "org/tiny@v9"} {
		if _, err := OpenCheckpoint(id); err == nil {
			t.Errorf("%s: want an error", id)
		}
	}
	t.Setenv("HF_HUB_CACHE", "")
	t.Setenv("HF_HOME", "/x")
	if HubCacheDir() != "/x/hub" {
		t.Errorf("HubCacheDir = %s", HubCacheDir())
	}
}

func TestUnsafeShardName(t *testing.T) {
	for name, unsafe := range map[string]bool{
		"model-00001-of-00002.safetensors": false,
		"sub/model.safetensors":            false,
		"/etc/passwd.safetensors":          true,
		"../x.safetensors":                 true,
		"a/../../x.safetensors":            true,
		"model.bin":                        true,
		"":                                 true,
		"a\x00.safetensors":                true,
	} {
		if got := unsafeShardName(name) != ""; got != unsafe {
			t.Errorf("%q: unsafe = %v, want %v", name, got, unsafe)
		}
	}
}

func TestParseIndex(t *testing.T) {
	tests := []struct {
		in    string
		valid bool
	}{
		{`{"weight_map":{"a":"x.safetensors"}}`, true},
		{`{"metadata":{"total_size":1e3},"weight_map":{}}`, true},
		{`not json`, false},
		{`{"metadata":{}}`, false},
		{`{"weight_map":{"a":1}}`, false},
		{`{"weight_map":[]}`, false},
		{`[]`, false},
	}
	for _, tt := range tests {
		idx := parseIndex(&Index{}, []byte(tt.in))
		if (idx.Err == nil) != tt.valid {
			t.Errorf("%s: err %v, want valid=%v", tt.in, idx.Err, tt.valid)
		}
	}
}

func FuzzParseIndex(f *testing.F) {
	f.Add([]byte(`{"metadata":{"total_size":8},"weight_map":{"a":"x.safetensors"}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		idx := parseIndex(&Index{}, b)
		if idx.Err == nil && idx.WeightMap == nil {
			t.Fatal("valid index without a weight map")
		}
		for _, n := range idx.shardNames() {
			_ = unsafeShardName(n)
		}
	})
}

func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(`{"vocab_size":10,"hidden_size":4,"tie_word_embeddings":false,"text_config":{"num_hidden_layers":2}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		parseConfig(&Config{}, b)
	})
}

func TestOpenRefusesNonRegularFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "model.safetensors")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	done := make(chan error, 1)
	go func() { _, err := Open(fifo); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("err = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Open blocked on a FIFO")
	}
	if _, err := Open(dir); err == nil {
		t.Error("a directory must not open")
	}
}
