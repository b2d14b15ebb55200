package checkpoint_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/checkpoint"
	"github.com/ckptcheck/ckptcheck/internal/fixture"
)

func TestBlobDigest(t *testing.T) {
	sha := strings.Repeat("ab", 32)
	git := strings.Repeat("0f", 20)
	tests := []struct {
		target string
		want   checkpoint.Digest
	}{
		{"../../blobs/" + sha, checkpoint.Digest{Algo: checkpoint.SHA256, Value: sha}},
		{"../../blobs/" + git, checkpoint.Digest{Algo: checkpoint.GitSHA1, Value: git}},
		{"/abs/cache/models--a--b/blobs/" + sha, checkpoint.Digest{Algo: checkpoint.SHA256, Value: sha}},
		{"../../blobs/" + strings.ToUpper(sha), checkpoint.Digest{}}, // the cache writes lowercase
		{"../../blobs/" + sha[:63], checkpoint.Digest{}},
		{"../../other/" + sha, checkpoint.Digest{}},
		{"model.safetensors", checkpoint.Digest{}},
		{"../../blobs/" + strings.Repeat("g", 40), checkpoint.Digest{}},
	}
	for _, tt := range tests {
		if got := checkpoint.BlobDigest(tt.target); got != tt.want {
			t.Errorf("BlobDigest(%q) = %+v, want %+v", tt.target, got, tt.want)
		}
	}
}

func TestSameBytes(t *testing.T) {
	sha := func(v string) checkpoint.Digest { return checkpoint.Digest{Algo: checkpoint.SHA256, Value: v} }
	etag := func(v string) checkpoint.Digest { return checkpoint.Digest{Algo: checkpoint.ETag, Value: v} }
	git := checkpoint.Digest{Algo: checkpoint.GitSHA1, Value: "aa"}
	tests := []struct {
		a, b        checkpoint.Digest
		same, known bool
	}{
		{sha("aa"), sha("aa"), true, true},
		{sha("aa"), sha("bb"), false, true},
		{sha("aa"), git, false, false}, // different algorithms tell nothing
		{etag("x"), etag("x"), true, true},
		{etag("x"), etag("y"), false, false}, // multipart ETags differ for equal bytes
		{checkpoint.Digest{}, sha("aa"), false, false},
	}
	for _, tt := range tests {
		same, known := checkpoint.SameBytes(tt.a, tt.b)
		if same != tt.same || known != tt.known {
			t.Errorf("SameBytes(%v, %v) = %v, %v; want %v, %v", tt.a, tt.b, same, known, tt.same, tt.known)
		}
	}
}

func TestCompanionKind(t *testing.T) {
	tests := map[string]checkpoint.FileKind{
		"config.json": checkpoint.KindConfig, "generation_config.json": checkpoint.KindGeneration,
		"tokenizer.json": checkpoint.KindTokenizer, "qwen.tiktoken": checkpoint.KindTokenizer,
		"chat_template.jinja": checkpoint.KindChatTemplate, "preprocessor_config.json": checkpoint.KindProcessor,
		"model.safetensors": "", "model.safetensors.index.json": "", "README.md": "", "sub/x.tiktoken": "",
	}
	for name, want := range tests {
		if got := checkpoint.CompanionKind(name); got != want {
			t.Errorf("CompanionKind(%q) = %q, want %q", name, got, want)
		}
	}
}

// writeModelDir writes a one-shard checkpoint with files beside it.
func writeModelDir(t *testing.T, extra map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "model.safetensors"), vec("w", 4))
	for name, content := range extra {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func names(fis []checkpoint.FileInfo) []string {
	var out []string
	for _, f := range fis {
		out = append(out, f.Name)
	}
	return out
}

func TestCompanionsAndFiles(t *testing.T) {
	dir := writeModelDir(t, map[string]string{"config.json": `{}`, "tokenizer.json": `{"model":{}}`,
		"README.md": "# model", "chat_template.jinja": "{{ messages }}"})
	writeFile(t, filepath.Join(dir, "model.fp16.safetensors"), vec("w", 4)) // another variant: not part of it
	c := open(t, filepath.Join(dir, "model.safetensors"), checkpoint.Options{})
	ctx := context.Background()
	comp, err := c.Companions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(comp); !slices.Equal(got, []string{"chat_template.jinja", "config.json", "tokenizer.json"}) {
		t.Errorf("companions %v", got)
	}
	if comp[1].Size != 2 || !comp[1].Digest.IsZero() {
		t.Errorf("config.json: %+v", comp[1])
	}
	files, err := c.Files(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(files); !slices.Equal(got, []string{"chat_template.jinja", "config.json", "model.safetensors", "tokenizer.json"}) {
		t.Errorf("files %v", got)
	}
	entries, err := c.Entries(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 6 {
		t.Errorf("entries %v", names(entries))
	}
	b, err := c.ReadFile(ctx, "tokenizer.json", 100)
	if err != nil || string(b) != `{"model":{}}` {
		t.Errorf("ReadFile = %q, %v", b, err)
	}
	if _, err := c.ReadFile(ctx, "tokenizer.json", 5); !errors.Is(err, checkpoint.ErrTooLarge) || !strings.Contains(err.Error(), "tokenizer.json") {
		t.Errorf("over the limit: %v", err)
	}
	if _, err := c.ReadFile(ctx, "nope.json", 5); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("absent: %v", err)
	}
}

// probeOnly is a Source that can neither list nor stat: a plain web
// server. Companions probes the known names, opening each.
type probeOnly struct{ checkpoint.Dir }

func (probeOnly) List(context.Context) ([]checkpoint.Entry, error) {
	return nil, checkpoint.ErrNotListable
}

func TestCompanionsOfAnUnlistableSource(t *testing.T) {
	dir := writeModelDir(t, map[string]string{"config.json": `{}`, "generation_config.json": `{"eos_token_id": 2}`})
	c := open(t, dir, checkpoint.Options{})
	c.Source = probeOnly{checkpoint.Dir(dir)}
	comp, err := c.Companions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := names(comp); !slices.Equal(got, []string{"config.json", "generation_config.json"}) || comp[1].Size != 19 {
		t.Errorf("probed %v (%+v)", got, comp)
	}
}

func TestHubCacheDigests(t *testing.T) {
	src := writeModelDir(t, map[string]string{"config.json": `{"model_type":"qwen3"}`})
	snap, err := fixture.WriteHubSnapshot(t.TempDir(), "org/m", "c0ffee", src)
	if err != nil {
		t.Fatal(err)
	}
	d := checkpoint.Dir(snap)
	ctx := context.Background()
	shard, err := d.Stat(ctx, "model.safetensors")
	if err != nil || shard.Digest.Algo != checkpoint.SHA256 || !shard.Digest.Verifiable() {
		t.Errorf("shard %+v, %v", shard, err)
	}
	b, _ := os.ReadFile(filepath.Join(src, "config.json"))
	cfg, err := checkpoint.Stat(ctx, d, "config.json")
	if err != nil || cfg.Digest.Algo != checkpoint.GitSHA1 || cfg.Digest.Value != fixture.BlobName("config.json", b) || cfg.Size != int64(len(b)) {
		t.Errorf("config %+v, %v", cfg, err)
	}
	if dg, err := checkpoint.Dir(src).Digest(ctx, "config.json"); err != nil || !dg.IsZero() {
		t.Errorf("a plain file has no digest: %+v, %v", dg, err)
	}
	if _, err := d.Stat(ctx, "absent.json"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("absent: %v", err)
	}
}
