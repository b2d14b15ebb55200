package checkpoint_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/ckptcheck/ckptcheck/checkpoint"
	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

func writeFile(t *testing.T, path string, tensors ...fixture.Tensor) {
	t.Helper()
	if err := fixture.WriteFile(path, tensors, map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
}

func vec(name string, n int) fixture.Tensor {
	return fixture.Tensor{Name: name, DType: safetensors.F32, Shape: []uint64{uint64(n)}, Data: make([]byte, 4*n)}
}

func open(t *testing.T, path string, opt checkpoint.Options) *checkpoint.Checkpoint {
	t.Helper()
	c, err := checkpoint.Open(context.Background(), path, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestOpenForms(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.safetensors"), vec("x", 2))
	writeFile(t, filepath.Join(dir, "b.safetensors"), vec("y", 3))
	index := `{"metadata":{"total_size":20},"weight_map":{"x":"a.safetensors","y":"./b.safetensors"}}`
	os.WriteFile(filepath.Join(dir, "model.safetensors.index.json"), []byte(index), 0o644)
	os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"model_type":"qwen3","tie_word_embeddings":true,"torch_dtype":"bfloat16","text_config":{"vocab_size":7}}`), 0o644)

	for _, p := range []string{dir, filepath.Join(dir, "model.safetensors.index.json")} {
		c := open(t, p, checkpoint.Options{})
		if c.Index == nil || c.IndexErr != nil || c.Index.TotalSize == nil || *c.Index.TotalSize != 20 {
			t.Errorf("%s: index %+v", p, c.Index)
		}
		if c.Config == nil || c.Config.ModelType != "qwen3" || c.Config.TieWordEmbeddings == nil || !*c.Config.TieWordEmbeddings || c.Config.VocabSize != 7 || c.Config.DType != "bfloat16" {
			t.Errorf("config = %+v", c.Config)
		}
		// "./b.safetensors" is cleaned to the name of the file.
		if got := shardNames(c); !slices.Equal(got, []string{"a.safetensors", "b.safetensors"}) || c.NumTensors() != 2 {
			t.Errorf("%s: shards %q, %d tensors", p, got, c.NumTensors())
		}
	}
	c := open(t, filepath.Join(dir, "a.safetensors"), checkpoint.Options{})
	if len(c.Shards) != 1 || c.Index != nil || c.NumTensors() != 1 || c.PartOf == nil {
		t.Errorf("single file: %+v", c)
	}
	for _, p := range []string{filepath.Join(dir, "missing"), t.TempDir()} {
		if _, err := checkpoint.Open(context.Background(), p, checkpoint.Options{}); err == nil {
			t.Errorf("%s: want an error", p)
		}
	}
}

// TestOneShardTwoNames: an index that names a file "./m.safetensors" and
// "m.safetensors" opens it once.
func TestOneShardTwoNames(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "m.safetensors"), vec("x", 1), vec("y", 1))
	os.WriteFile(filepath.Join(dir, "model.safetensors.index.json"), []byte(`{"weight_map":{"x":"./m.safetensors","y":"m.safetensors"}}`), 0o644)
	c := open(t, dir, checkpoint.Options{})
	if len(c.Shards) != 1 || c.NumTensors() != 2 {
		t.Errorf("%d shards, %d tensors", len(c.Shards), c.NumTensors())
	}
}

func TestAnyFileNameWhenNamedDirectly(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "model.st"), vec("x", 1))
	c := open(t, filepath.Join(dir, "model.st"), checkpoint.Options{})
	if len(c.Shards) != 1 || c.Shards[0].File == nil || c.Shards[0].Status != checkpoint.ShardOK {
		t.Errorf("shards = %+v, want model.st opened", c.Shards)
	}
}

// shardNames lists a checkpoint's shard names in order.
func shardNames(c *checkpoint.Checkpoint) []string {
	var out []string
	for _, s := range c.Shards {
		out = append(out, s.Name)
	}
	return out
}

func TestVariants(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "model.safetensors"), vec("x", 1))
	writeFile(t, filepath.Join(dir, "model.fp16.safetensors"), vec("x", 2))
	c := open(t, dir, checkpoint.Options{})
	if len(c.Shards) != 1 || c.Shards[0].Name != "model.safetensors" || !slices.Equal(c.Variants, []string{"fp16"}) {
		t.Errorf("plain: shards %v, variants %v", c.Shards, c.Variants)
	}
	c = open(t, dir, checkpoint.Options{Variant: "fp16"})
	if len(c.Shards) != 1 || c.Shards[0].Name != "model.fp16.safetensors" || c.Variant != "fp16" || !slices.Equal(c.Variants, []string{""}) {
		t.Errorf("fp16: shards %v, variants %v", c.Shards, c.Variants)
	}
	if _, err := checkpoint.Open(context.Background(), dir, checkpoint.Options{Variant: "int8"}); err == nil || !strings.Contains(err.Error(), "fp16") {
		t.Errorf("unknown variant: err = %v, want it to list the variants", err)
	}
	// Variants and no plain one: there is no default to read.
	os.Remove(filepath.Join(dir, "model.safetensors"))
	writeFile(t, filepath.Join(dir, "model.fp32.safetensors"), vec("x", 3))
	_, err := checkpoint.Open(context.Background(), dir, checkpoint.Options{})
	var several *checkpoint.VariantsError
	if !errors.As(err, &several) || !slices.Equal(several.Variants, []string{"fp16", "fp32"}) ||
		err.Error() != dir+": holds 2 checkpoints, one per variant, and no plain one: choose one with --variant (fp16, fp32)" {
		t.Errorf("no plain one: err = %v, want a *VariantsError of fp16 and fp32", err)
	}
}

func TestMissingShards(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.safetensors"), vec("x", 1))
	os.WriteFile(filepath.Join(dir, "model.safetensors.index.json"), []byte(`{"weight_map":{"x":"a.safetensors","y":"b.safetensors","z":"../etc.safetensors"}}`), 0o644)
	c := open(t, dir, checkpoint.Options{})
	var opened, missing, unsafe []string
	for _, s := range c.Shards {
		switch {
		case s.Status == checkpoint.ShardMissing:
			missing = append(missing, s.Name)
		case s.Status == checkpoint.ShardUnsafe:
			unsafe = append(unsafe, s.Name)
		case s.File != nil:
			opened = append(opened, s.Name)
		}
	}
	if !slices.Equal(opened, []string{"a.safetensors"}) || !slices.Equal(missing, []string{"b.safetensors"}) ||
		!slices.Equal(unsafe, []string{"../etc.safetensors"}) {
		t.Errorf("opened %q, missing %q, unsafe %q", opened, missing, unsafe)
	}

	// A dangling symlink found in a directory is a missing shard, not trouble.
	dir = t.TempDir()
	writeFile(t, filepath.Join(dir, "a.safetensors"), vec("x", 1))
	if err := os.Symlink("nowhere", filepath.Join(dir, "b.safetensors")); err != nil {
		t.Skip(err)
	}
	c = open(t, dir, checkpoint.Options{})
	if len(c.Shards) != 2 || c.Shards[0].Status != checkpoint.ShardOK || c.Shards[1].Name != "b.safetensors" || c.Shards[1].Status != checkpoint.ShardDangling || c.Shards[1].Reason == "" {
		t.Errorf("dangling symlink: %+v", c.Shards)
	}
}

func TestOpenHubCache(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("HF_HUB_CACHE", cache)
	t.Chdir(t.TempDir())
	for _, repo := range []string{"models--org--tiny", "models--gpt2"} {
		base := filepath.Join(cache, repo)
		writeFile(t, filepath.Join(base, "blobs", "0123abcd"), vec("w", 1))
		snap := filepath.Join(base, "snapshots", "c0ffee00")
		os.MkdirAll(snap, 0o755)
		if err := os.Symlink(filepath.Join("..", "..", "blobs", "0123abcd"), filepath.Join(snap, "model.safetensors")); err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Join(base, "refs"), 0o755)
		os.WriteFile(filepath.Join(base, "refs", "main"), []byte("c0ffee00\n"), 0o644)
	}
	for _, id := range []string{"org/tiny", "org/tiny@main", "org/tiny@c0ffee00", "org/tiny@c0ff", "gpt2"} {
		c := open(t, id, checkpoint.Options{})
		if c.Hub == nil || c.Hub.Commit != "c0ffee00" || c.NumTensors() != 1 || c.Shards[0].Status != checkpoint.ShardOK {
			t.Errorf("%s: hub %+v, %d tensors", id, c.Hub, c.NumTensors())
		}
	}
	_, err := checkpoint.Open(context.Background(), "org/tiny@v9", checkpoint.Options{})
	if err == nil || !strings.Contains(err.Error(), "main") || !strings.Contains(err.Error(), "c0ffee00") {
		t.Errorf("a miss must list the cached refs and commits: %v", err)
	}
	if _, err := checkpoint.Open(context.Background(), "org/other", checkpoint.Options{}); err == nil {
		t.Error("org/other: want an error")
	}
	// A directory of refs (refs/pr/1) is no ref: the revision is looked
	// for among the commits. A ref file that is no ref is an error.
	refs := filepath.Join(cache, "models--gpt2", "refs")
	os.MkdirAll(filepath.Join(refs, "pr"), 0o755)
	os.WriteFile(filepath.Join(refs, "pr", "1"), []byte("c0ffee00\n"), 0o644)
	if _, err := checkpoint.Open(context.Background(), "gpt2@pr", checkpoint.Options{}); err == nil || !strings.Contains(err.Error(), "revision pr is not in the hub cache") {
		t.Errorf("gpt2@pr: %v", err)
	}
	os.WriteFile(filepath.Join(refs, "main"), make([]byte, 2<<10), 0o644)
	if _, err := checkpoint.Open(context.Background(), "gpt2", checkpoint.Options{}); err == nil || !strings.Contains(err.Error(), "gpt2: hub cache ref "+filepath.Join(refs, "main")+": file is larger than 1 KiB") {
		t.Errorf("a huge refs/main: %v", err)
	}
	// An interrupted download: the snapshot's link points at no blob.
	snap := filepath.Join(cache, "models--org--tiny", "snapshots", "c0ffee00")
	os.Symlink(filepath.Join("..", "..", "blobs", "missing"), filepath.Join(snap, "extra.safetensors"))
	c := open(t, "org/tiny", checkpoint.Options{})
	found := false
	for _, s := range c.Shards {
		found = found || s.Status == checkpoint.ShardDangling && strings.Contains(s.Reason, "re-run the download")
	}
	if !found {
		t.Errorf("no interrupted download reported: %+v", c.Shards)
	}
	// An existing path wins over a repo id.
	os.MkdirAll("org", 0o755)
	writeFile(t, filepath.Join("org", "tiny"), vec("local", 3))
	if c := open(t, "org/tiny", checkpoint.Options{}); c.Hub != nil {
		t.Error("the local path org/tiny must win over the repo id")
	}
	t.Setenv("HF_HUB_CACHE", "")
	t.Setenv("HF_HOME", "/x")
	if checkpoint.HubCacheDir() != "/x/hub" {
		t.Errorf("HubCacheDir = %s", checkpoint.HubCacheDir())
	}
}

func TestUnsafeName(t *testing.T) {
	for name, unsafe := range map[string]bool{
		"model-00001-of-00002.safetensors": false,
		"sub/model.safetensors":            false,
		"/etc/passwd.safetensors":          true,
		"../x.safetensors":                 true,
		"a/../../x.safetensors":            true,
		`..\x.safetensors`:                 true,
		"C:x.safetensors":                  true,
		"model.msgpack":                    true,
		"training_args.bin":                false, // a torch file, if not a weight file
		"":                                 true,
		"a\x00.safetensors":                true,
	} {
		if got := checkpoint.UnsafeName(name) != ""; got != unsafe {
			t.Errorf("%q: unsafe = %v, want %v", name, got, unsafe)
		}
	}
}

func TestParseIndex(t *testing.T) {
	tests := []struct {
		in     string
		valid  bool
		total  int64 // -1: absent
		shards []string
	}{
		{`{"weight_map":{"a":"x.safetensors"}}`, true, -1, []string{"x.safetensors"}},
		{`{"metadata":{"total_size":1e3},"weight_map":{}}`, true, 1000, nil},
		{`{"metadata":{"total_size":0},"weight_map":{"a":"./x.safetensors","b":"x.safetensors","c":"a//y.safetensors"}}`, true, 0,
			[]string{"a/y.safetensors", "x.safetensors"}},
		{`{"metadata":{"total_size":"8"},"weight_map":{}}`, true, -1, nil},
		{`{"metadata":{"total_size":1.5},"weight_map":{}}`, false, -1, nil},
		{`not json`, false, -1, nil},
		{`{"metadata":{}}`, false, -1, nil},
		{`{"weight_map":{"a":1}}`, false, -1, nil},
		{`{"weight_map":[]}`, false, -1, nil},
		{`{"weight_map":{}} x`, false, -1, nil},
		{`[]`, false, -1, nil},
	}
	for _, tt := range tests {
		idx, err := checkpoint.ParseIndex([]byte(tt.in))
		if (err == nil) != tt.valid || (err == nil) != (idx != nil) {
			t.Errorf("%s: %v, err %v, want valid=%v", tt.in, idx, err, tt.valid)
		}
		if idx == nil {
			idx = &checkpoint.Index{}
		}
		if (idx.TotalSize == nil) != (tt.total < 0) || (idx.TotalSize != nil && *idx.TotalSize != uint64(tt.total)) {
			t.Errorf("%s: total_size %v, want %d", tt.in, idx.TotalSize, tt.total)
		}
		if got := idx.ShardNames(); !slices.Equal(got, tt.shards) {
			t.Errorf("%s: shard names %q, want %q", tt.in, got, tt.shards)
		}
	}
}

func FuzzParseIndex(f *testing.F) {
	f.Add([]byte(`{"metadata":{"total_size":8},"weight_map":{"a":"x.safetensors","b":"./x.safetensors"}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		idx, err := checkpoint.ParseIndex(b)
		if err == nil && idx.WeightMap == nil {
			t.Fatal("valid index without a weight map")
		}
		if err != nil {
			if idx != nil {
				t.Fatal("an error with an index")
			}
			return
		}
		names := idx.ShardNames()
		if !slices.IsSorted(names) || len(slices.Compact(slices.Clone(names))) != len(names) {
			t.Fatalf("shard names not sorted and distinct: %q", names)
		}
		for _, n := range names {
			if checkpoint.UnsafeName(n) == "" && strings.Contains(n, "..") && slices.Contains(strings.Split(n, "/"), "..") {
				t.Fatalf("%q judged safe", n)
			}
		}
	})
}

func TestParseConfig(t *testing.T) {
	tests := []struct {
		in       string
		check    func(c *checkpoint.Config) bool
		problems int
	}{
		{`{"hidden_size":64,"num_attention_heads":4,"head_dim":null}`, func(c *checkpoint.Config) bool { return c.HeadDim == 16 && c.NumKeyValueHeads == 4 }, 0},
		{`{"hidden_size":64,"num_attention_heads":4,"num_key_value_heads":2,"head_dim":32}`, func(c *checkpoint.Config) bool {
			return c.HeadDim == 32 && c.Ints["head_dim"] == 32 && c.NumKeyValueHeads == 2
		}, 0},
		{`{"vocab_size":"32000"}`, func(c *checkpoint.Config) bool { return c.VocabSize == 0 }, 1},
		{`{"num_hidden_layers":18446744073709551615}`, func(c *checkpoint.Config) bool {
			_, ok := c.Ints["num_hidden_layers"]
			return c.NumHiddenLayers == 1<<64-1 && !ok
		}, 0},
		{`{"num_hidden_layers":-1,"hidden_size":2.5,"tie_word_embeddings":"yes"}`, func(c *checkpoint.Config) bool { return c.TieWordEmbeddings == nil }, 3},
		{`{"dtype":"bfloat16","text_config":{"vocab_size":7}}`, func(c *checkpoint.Config) bool { return c.DType == "bfloat16" && c.VocabSize == 7 }, 0},
		// transformers v5 keeps dtype when both are given.
		{`{"torch_dtype":"float32","dtype":"bfloat16"}`, func(c *checkpoint.Config) bool { return c.DType == "bfloat16" }, 0},
		{`{"quantization_config":{"quant_method":"fp8"}}`, func(c *checkpoint.Config) bool { return c.Quantized }, 0},
		// A top-level field wins over text_config's, also when it is not
		// an integer: adapters (Ints) and checks (typed fields) agree.
		{`{"vocab_size":"x","text_config":{"vocab_size":7,"head_dim":16}}`, func(c *checkpoint.Config) bool {
			_, ok := c.Ints["vocab_size"]
			return c.VocabSize == 0 && !ok && c.HeadDim == 16 && c.Ints["head_dim"] == 16
		}, 1},
		// head_dim 0 is what the file says; only an absent or null one is derived.
		{`{"head_dim":0,"hidden_size":64,"num_attention_heads":4}`, func(c *checkpoint.Config) bool {
			v, ok := c.Ints["head_dim"]
			return c.HeadDim == 0 && ok && v == 0
		}, 0},
		// A repeated key keeps its last value, as json.Unmarshal does.
		{`{"vocab_size":1,"vocab_size":9}`, func(c *checkpoint.Config) bool { return c.VocabSize == 9 && len(c.Fields) == 1 && c.UnreadFields == 0 }, 0},
		{`{"text_config":null,"vocab_size":3}`, func(c *checkpoint.Config) bool { return c.VocabSize == 3 }, 0},
	}
	for _, tt := range tests {
		c, err := checkpoint.ParseConfig([]byte(tt.in))
		if err != nil {
			t.Errorf("%s: %v", tt.in, err)
			continue
		}
		if !tt.check(c) || len(c.Problems) != tt.problems {
			t.Errorf("%s: %+v (problems %q)", tt.in, c, c.Problems)
		}
	}
	for _, in := range []string{`[]`, `"x"`, `{`, ``, `null`, `{"a":1} x`, `{"a":1}{}`} {
		c, err := checkpoint.ParseConfig([]byte(in))
		if c != nil || err == nil || strings.Contains(err.Error(), "Go ") {
			t.Errorf("%q: %v, err = %v", in, c, err)
		}
	}
}

// TestParseConfigFieldCap: past MaxConfigFields top-level fields (also in
// text_config) the rest are counted, not read; the fields read come first
// in the file.
func TestParseConfigFieldCap(t *testing.T) {
	for _, extra := range []int{0, 1, 5000} {
		var b strings.Builder
		b.WriteString(`{"vocab_size":11`)
		for i := range checkpoint.MaxConfigFields - 1 + extra {
			fmt.Fprintf(&b, `,"f%d":%d`, i, i)
		}
		b.WriteString(`,"vocab_size":12}`) // a repeat of a field read is read
		c, err := checkpoint.ParseConfig([]byte(b.String()))
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Fields) != checkpoint.MaxConfigFields || c.UnreadFields != extra || c.VocabSize != 12 {
			t.Errorf("%d fields over the cap: %d read, %d unread, vocab_size %d; want %d, %d, 12",
				extra, len(c.Fields), c.UnreadFields, c.VocabSize, checkpoint.MaxConfigFields, extra)
		}
		if _, ok := c.Fields["f0"]; !ok {
			t.Errorf("%d fields over the cap: the first field was not read", extra)
		}
		text, err := checkpoint.ParseConfig([]byte(`{"text_config":` + b.String() + `}`))
		if err != nil || text.VocabSize != 12 || len(text.Problems) != 0 {
			t.Errorf("%d fields over the cap in text_config: %v, vocab_size %d, problems %q", extra, err, text.VocabSize, text.Problems)
		}
	}
}

// FuzzParseConfig checks ParseConfig against a plain reading of the same
// bytes: each typed field is the integer the file gives (top-level first,
// then text_config) or its documented default, Ints agrees with the typed
// fields and holds nothing the file does not say, and every problem is one
// line without Go's type names.
func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(`{"vocab_size":10,"hidden_size":4,"tie_word_embeddings":false,"text_config":{"num_hidden_layers":2}}`))
	f.Add([]byte(`{"head_dim":null,"num_attention_heads":0,"hidden_size":18446744073709551615}`))
	f.Add([]byte(`{"vocab_size":"x","text_config":{"vocab_size":7,"head_dim":16}}`))
	f.Add([]byte(`{"head_dim":0,"hidden_size":64,"num_attention_heads":4}`))
	f.Add([]byte(`{"num_key_value_heads":null,"num_attention_heads":4,"text_config":[]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := checkpoint.ParseConfig(b)
		if err != nil {
			if c != nil {
				t.Fatalf("a config that is no JSON object carries values: %+v", c)
			}
			if strings.Contains(err.Error(), "Go ") {
				t.Fatalf("Go internals in %q", err)
			}
			return
		}
		var top, text map[string]json.RawMessage
		if err := json.Unmarshal(b, &top); err != nil || top == nil || c.Fields == nil || c.Ints == nil {
			t.Fatalf("accepted %q (%v) with fields %v, ints %v", b, err, c.Fields, c.Ints)
		}
		if raw, ok := top["text_config"]; ok {
			json.Unmarshal(raw, &text)
		}
		lookup := func(key string) (json.RawMessage, bool) {
			if v, ok := top[key]; ok {
				return v, true
			}
			v, ok := text[key]
			return v, ok
		}
		given := func(key string) (uint64, bool) {
			raw, ok := lookup(key)
			if !ok {
				return 0, false
			}
			n, err := strconv.ParseUint(string(raw), 10, 64)
			return n, err == nil
		}
		typed := map[string]uint64{"vocab_size": c.VocabSize, "hidden_size": c.HiddenSize, "num_hidden_layers": c.NumHiddenLayers,
			"num_attention_heads": c.NumAttentionHeads, "num_key_value_heads": c.NumKeyValueHeads, "head_dim": c.HeadDim}
		for key, got := range typed {
			if n, ok := given(key); ok && got != n {
				t.Fatalf("%s = %d, the file says %d", key, got, n)
			}
		}
		if _, ok := lookup("num_key_value_heads"); !ok && c.NumKeyValueHeads != c.NumAttentionHeads {
			t.Fatalf("num_key_value_heads absent: %d, want num_attention_heads %d", c.NumKeyValueHeads, c.NumAttentionHeads)
		}
		if raw, ok := lookup("head_dim"); (!ok || string(raw) == "null") && c.NumAttentionHeads > 0 && c.HiddenSize%c.NumAttentionHeads == 0 &&
			c.HeadDim != c.HiddenSize/c.NumAttentionHeads {
			t.Fatalf("head_dim absent: %d, want hidden_size / num_attention_heads", c.HeadDim)
		}
		for k, v := range c.Ints {
			n, ok := given(k)
			_, isTyped := typed[k]
			switch {
			case v > math.MaxInt64:
				t.Fatalf("%s = %d exceeds the bound", k, v)
			case ok && n != v:
				t.Fatalf("Ints[%s] = %d, the file says %d", k, v, n)
			case !ok && !isTyped:
				t.Fatalf("Ints[%s] = %d, which the file does not give", k, v)
			case isTyped && typed[k] != v:
				t.Fatalf("Ints[%s] = %d, the typed field %d", k, v, typed[k])
			}
		}
		for _, p := range c.Problems {
			if p == "" || strings.ContainsAny(p, "\n") || strings.Contains(p, "Go ") {
				t.Fatalf("problem %q", p)
			}
		}
	})
}

func TestSymlinkLoopIsTrouble(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.safetensors"), filepath.Join(dir, "b.safetensors")
	if os.Symlink(b, a) != nil || os.Symlink(a, b) != nil {
		t.Skip("no symlinks")
	}
	_, err := checkpoint.Open(context.Background(), dir, checkpoint.Options{})
	if err == nil || !errors.Is(err, syscall.ELOOP) {
		t.Errorf("err = %v, want a symlink loop", err)
	}
}

func TestUnchanged(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "m.safetensors")
	writeFile(t, p, vec("x", 4))
	c := open(t, p, checkpoint.Options{})
	if err := c.Unchanged(); err != nil {
		t.Fatal(err)
	}
	f, _ := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	f.Write([]byte("more"))
	f.Close()
	if err := c.Unchanged(); !errors.Is(err, checkpoint.ErrChanged) {
		t.Errorf("err = %v, want ErrChanged", err)
	}
}

// failingSource is a directory whose files fail to read: the I/O error of a
// disk going bad, injected at the Source seam.
type failingSource struct{ checkpoint.Dir }

type failingFile struct{ checkpoint.File }

func (failingFile) ReadAt([]byte, int64) (int, error) { return 0, syscall.EIO }

func (s failingSource) Open(ctx context.Context, name string) (checkpoint.File, error) {
	f, err := s.Dir.Open(ctx, name)
	if err != nil || !strings.HasSuffix(name, ".safetensors") {
		return f, err
	}
	return failingFile{f}, nil
}

func TestIOErrorIsTrouble(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "model.safetensors"), vec("x", 4))
	for _, name := range []string{"", "model.safetensors"} {
		c, err := checkpoint.OpenSource(context.Background(), failingSource{checkpoint.Dir(dir)}, name, checkpoint.Options{})
		if c != nil || !errors.Is(err, syscall.EIO) || !strings.Contains(err.Error(), filepath.Join(dir, "model.safetensors")) {
			t.Errorf("%q: checkpoint %v, err %v; want nil and an I/O error naming the file", name, c, err)
		}
	}
}

// TestShardStatus: what opening each shard found is its one Status; a file
// with trailing bytes stays readable, one with a wrong layout shows its
// header but not its bytes.
func TestShardStatus(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.safetensors"), vec("a", 2))
	writeFile(t, filepath.Join(dir, "b.safetensors"), vec("b", 2))
	writeFile(t, filepath.Join(dir, "c.safetensors"), vec("c", 2))
	os.WriteFile(filepath.Join(dir, "d.safetensors"), []byte("not safetensors"), 0o644)
	fh, _ := os.OpenFile(filepath.Join(dir, "b.safetensors"), os.O_APPEND|os.O_WRONLY, 0)
	fh.Write([]byte("junk"))
	fh.Close()
	st, _ := os.Stat(filepath.Join(dir, "c.safetensors"))
	os.Truncate(filepath.Join(dir, "c.safetensors"), st.Size()-1)
	c := open(t, dir, checkpoint.Options{})
	want := []struct {
		status       checkpoint.ShardStatus
		file, header bool
		kind         safetensors.ErrorKind
	}{
		{checkpoint.ShardOK, true, true, 0},
		{checkpoint.ShardTrailing, true, true, safetensors.MetadataIncompleteBuffer},
		{checkpoint.ShardInvalid, false, true, safetensors.MetadataIncompleteBuffer},
		{checkpoint.ShardInvalid, false, false, safetensors.HeaderTooLarge},
	}
	if len(c.Shards) != len(want) {
		t.Fatalf("%d shards", len(c.Shards))
	}
	for i, w := range want {
		s := c.Shards[i]
		var fe *safetensors.FormatError
		kind := safetensors.ErrorKind(0)
		if errors.As(s.Err, &fe) {
			kind = fe.Kind
		}
		if s.Status != w.status || (s.File != nil) != w.file || (s.Header != nil) != w.header || (s.Safetensors() != nil) != w.header || kind != w.kind {
			t.Errorf("%s: %v file %v header %v err %v", s.Name, s.Status, s.File != nil, s.Header != nil, s.Err)
		}
	}
	if c.Tensor("b") == nil || c.Tensor("c") != nil {
		t.Error("the trailing file's tensor must be readable, the truncated one's not")
	}
}

// TestVariantIndex: a variant's index (model.safetensors.index.fp16.json)
// is read as an index, though given as a path it would not be one.
func TestVariantIndex(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "model.safetensors"), vec("x", 1))
	writeFile(t, filepath.Join(dir, "model.fp16-00001-of-00001.safetensors"), vec("x", 2))
	os.WriteFile(filepath.Join(dir, "model.safetensors.index.fp16.json"), []byte(`{"weight_map":{"x":"model.fp16-00001-of-00001.safetensors"}}`), 0o644)
	c := open(t, dir, checkpoint.Options{Variant: "fp16"})
	if c.Index == nil || c.IndexErr != nil || c.Index.Name != "model.safetensors.index.fp16.json" ||
		!slices.Equal(shardNames(c), []string{"model.fp16-00001-of-00001.safetensors"}) || c.Shards[0].Status != checkpoint.ShardOK {
		t.Errorf("index %+v (%v), shards %q", c.Index, c.IndexErr, shardNames(c))
	}
}
