package verify

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/checkpoint"
	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

const (
	tokJSON = `{"version": "1.0", "added_tokens": [{"id": 3, "content": "<s>", "special": true}, {"id": 4, "content": "</s>", "special": true}],
 "normalizer": null, "pre_tokenizer": {"type": "ByteLevel"}, "post_processor": null, "decoder": {"type": "ByteLevel"},
 "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]}}`
	tokConfig = `{"eos_token": "</s>", "bos_token": {"content": "<s>", "lstrip": false}, "model_max_length": 32768,
 "chat_template": "{% for m in messages %}{{ m.content }}{% endfor %}",
 "added_tokens_decoder": {"3": {"content": "<s>"}, "4": {"content": "</s>"}}}`
	genConfig = `{"eos_token_id": 4, "temperature": 0.7, "transformers_version": "4.51.0"}`
	stMap     = `{"eos_token": "</s>", "bos_token": "<s>"}`
)

// publishedFiles are the files beside the weights of the published fixture.
func publishedFiles() map[string]string {
	return map[string]string{"tokenizer.json": tokJSON, "tokenizer_config.json": tokConfig,
		"generation_config.json": genConfig, "special_tokens_map.json": stMap}
}

func with(m map[string]string, kv ...string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

func compareFilesOf(t *testing.T, pub, exp string, opt FileOptions) []string {
	t.Helper()
	fs, err := CompareFiles(context.Background(), openCheckpoint(t, pub), openCheckpoint(t, exp), opt)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range fs {
		where := f.Key
		if where == "" {
			where = filepath.Base(f.File)
		}
		out = append(out, fmt.Sprintf("%s %s %s", f.Severity, f.Code, where))
		if f.Message == "" {
			t.Errorf("no message: %+v", f)
		}
	}
	slices.Sort(out)
	return out
}

func TestCompareFiles(t *testing.T) {
	tensors := fixture.Tiny.Tensors(safetensors.BF16)
	pub := writeModel(t, tensors, 3, publishedFiles())
	v5Template := strings.ReplaceAll(tokConfig, `"chat_template": "{% for m in messages %}{{ m.content }}{% endfor %}",`, "")
	tests := []struct {
		name  string
		files map[string]string
		opt   FileOptions
		want  []string
	}{
		{"identical copies", publishedFiles(), FileOptions{}, nil},
		{"weights only", map[string]string{"config.json": ""}, FileOptions{}, []string{"info weights_only_export m"}},
		{"weights only, files required", map[string]string{"config.json": ""}, FileOptions{RequireFiles: true}, []string{
			"error missing_file config.json", "error missing_file generation_config.json", "error missing_file special_tokens_map.json",
			"error missing_file tokenizer.json", "error missing_file tokenizer_config.json"}},
		{"config only", nil, FileOptions{}, []string{
			"warning missing_file generation_config.json", "warning missing_file special_tokens_map.json",
			"warning missing_file tokenizer.json", "warning missing_file tokenizer_config.json"}},
		{"template moved to chat_template.jinja, files re-indented, bookkeeping changed", with(publishedFiles(),
			"tokenizer_config.json", v5Template, "chat_template.jinja", "{% for m in messages %}{{ m.content }}{% endfor %}",
			"tokenizer.json", strings.ReplaceAll(tokJSON, "\n", "\n   "),
			"generation_config.json", `{"eos_token_id": [4], "temperature": 0.70, "transformers_version": "5.0.0"}`), FileOptions{}, nil},
		{"eos changed everywhere, sampling default changed", with(publishedFiles(),
			"tokenizer_config.json", strings.Replace(tokConfig, `"eos_token": "</s>"`, `"eos_token": "<s>"`, 1),
			"special_tokens_map.json", `{"eos_token": "<s>", "bos_token": "<s>"}`,
			"generation_config.json", `{"eos_token_id": 3, "temperature": 0.6}`), FileOptions{}, []string{
			"info config_changed temperature", "warning tokenizer_changed eos_token", "warning tokenizer_changed eos_token_id"}},
		{"chat template changed", with(publishedFiles(), "chat_template.jinja", "{{ messages }}"), FileOptions{},
			[]string{"warning tokenizer_changed chat_template"}},
		{"chat template lost", with(publishedFiles(), "tokenizer_config.json", v5Template), FileOptions{},
			[]string{"warning tokenizer_changed chat_template"}},
		{"added token and vocabulary changed", with(publishedFiles(),
			"tokenizer.json", strings.NewReplacer(`"</s>"`, `"<|end|>"`, `"ab": 2}`, `"ab": 2, "ba": 5}`).Replace(tokJSON)), FileOptions{},
			[]string{"warning tokenizer_changed added_tokens", "warning tokenizer_changed model.vocab"}},
		{"a loading option changed", with(publishedFiles(), "tokenizer_config.json", strings.Replace(tokConfig, "32768", "8192", 1)), FileOptions{},
			[]string{"warning tokenizer_changed model_max_length"}},
		{"config changed", with(publishedFiles(), "config.json", `{"model_type": "qwen3", "torch_dtype": "bfloat16", "eos_token_id": 9}`), FileOptions{},
			[]string{"warning tokenizer_changed eos_token_id"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			exp := writeModel(t, tensors, 1, tt.files)
			if got := compareFilesOf(t, pub, exp, tt.opt); !slices.Equal(got, tt.want) {
				t.Errorf("findings\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(tt.want, "\n  "))
			}
		})
	}
}

// TestCompareOtherFiles: vocabulary tables are summarised by size, processor
// configs compared field by field.
func TestCompareOtherFiles(t *testing.T) {
	tensors := fixture.Tiny.Tensors(safetensors.BF16)
	files := map[string]string{"vocab.json": `{"a": 0, "b": 1}`, "merges.txt": "a b\n", "preprocessor_config.json": `{"size": 224, "do_resize": true}`}
	pub := writeModel(t, tensors, 3, files)
	exp := writeModel(t, tensors, 1, with(files, "vocab.json", `{"a": 0, "b": 1, "c": 2}`, "merges.txt", "b a\n", "preprocessor_config.json", `{"size": 448, "do_resize": true}`))
	want := []string{"info config_changed size", "warning tokenizer_changed merges.txt", "warning tokenizer_changed vocab.json"}
	if got := compareFilesOf(t, pub, exp, FileOptions{}); !slices.Equal(got, want) {
		t.Errorf("findings %v, want %v", got, want)
	}
	fs, _ := CompareFiles(context.Background(), openCheckpoint(t, pub), openCheckpoint(t, exp), FileOptions{})
	for _, f := range fs {
		if strings.HasSuffix(f.File, "vocab.json") && !strings.Contains(f.Message, "(2 entries → 3 entries)") {
			t.Errorf("%v", f)
		}
	}
}

func TestCompareFilesMessages(t *testing.T) {
	tensors := fixture.Tiny.Tensors(safetensors.BF16)
	pub := writeModel(t, tensors, 3, publishedFiles())
	exp := writeModel(t, tensors, 1, with(publishedFiles(),
		"tokenizer.json", strings.NewReplacer(`"</s>"`, `"<|end|>"`, `"ab": 2}`, `"ab": 2, "ba": 5}`).Replace(tokJSON),
		"tokenizer_config.json", strings.Replace(tokConfig, `"eos_token": "</s>"`, `"eos_token": "<|end|>"`, 1),
		"chat_template.jinja", "{% for m in messages %}\n{{ m.role }}{% endfor %}"))
	fs, err := CompareFiles(context.Background(), openCheckpoint(t, pub), openCheckpoint(t, exp), FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var msgs []string
	for _, f := range fs {
		msgs = append(msgs, f.Key+": "+f.Message)
	}
	want := []string{
		`added_tokens: added tokens: 1 changed (4 "</s>" → "<|end|>")`,
		"model.vocab: the vocab changed (3 entries → 4 entries)",
		`eos_token: "</s>" → "<|end|>"`,
		"chat_template: the chat template changed (50 characters → 48 characters; first difference at line 1)",
	}
	if !slices.Equal(msgs, want) {
		t.Errorf("messages\n  %s\nwant\n  %s", strings.Join(msgs, "\n  "), strings.Join(want, "\n  "))
	}
	weightsOnly := writeModel(t, tensors, 1, map[string]string{"config.json": ""})
	fs, _ = CompareFiles(context.Background(), openCheckpoint(t, pub), openCheckpoint(t, weightsOnly), FileOptions{})
	if len(fs) != 1 || !strings.Contains(fs[0].Message, "copy config.json, generation_config.json, special_tokens_map.json, tokenizer.json, tokenizer_config.json from the published checkpoint") {
		t.Errorf("%v", fs)
	}
}

// digestSource is a source that knows SHA-256 digests of some files
// without reading them, as a remote store or the hub cache does.
type digestSource struct {
	*countingSource
	digests map[string]checkpoint.Digest
}

func (s digestSource) Digest(_ context.Context, name string) (checkpoint.Digest, error) {
	return s.digests[name], nil
}

// TestCompareFilesReadsOnlyWhatDiffers checks the order of comparisons:
// sizes, then known digests, then hashing; and reading to describe only
// what differs.
func TestCompareFilesReadsOnlyWhatDiffers(t *testing.T) {
	tensors := fixture.Tiny.Tensors(safetensors.BF16)
	pub := writeModel(t, tensors, 3, publishedFiles())
	exp := writeModel(t, tensors, 1, publishedFiles())
	ctx := context.Background()
	run := func(pubSrc, expSrc checkpoint.Source) []Finding {
		t.Helper()
		p, e := openCheckpoint(t, pub), openCheckpoint(t, exp)
		p.Source, e.Source = pubSrc, expSrc
		fs, err := CompareFiles(ctx, p, e, FileOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return fs
	}
	// Same sizes, no digests: each file is hashed once, never read twice.
	ps, es := newCounting(pub), newCounting(exp)
	if fs := run(ps, es); len(fs) != 0 {
		t.Fatalf("%v", fs)
	}
	for _, s := range []*countingSource{ps, es} {
		for name, n := range s.opens {
			if n != 1 {
				t.Errorf("%s opened %d times", name, n)
			}
		}
	}
	// Digests the sources know and agree on: nothing is read, even when
	// the bytes on disk would differ.
	os.WriteFile(filepath.Join(exp, "tokenizer.json"), []byte(strings.Replace(tokJSON, `"a b"`, `"b a"`, 1)), 0o644)
	same := map[string]checkpoint.Digest{}
	for name := range publishedFiles() {
		same[name] = checkpoint.Digest{Algo: checkpoint.SHA256, Value: name}
	}
	same["config.json"] = checkpoint.Digest{Algo: checkpoint.SHA256, Value: "config"}
	ps, es = newCounting(pub), newCounting(exp)
	if fs := run(digestSource{ps, same}, digestSource{es, same}); len(fs) != 0 {
		t.Fatalf("%v", fs)
	}
	if len(ps.opens)+len(es.opens) != 0 {
		t.Errorf("opened %v and %v; want nothing", ps.opens, es.opens)
	}
	// One side knows a digest: the other side's file is hashed to compare,
	// then both are read to say what changed.
	pubDigest := sha256Sum([]byte(tokJSON))
	ps, es = newCounting(pub), newCounting(exp)
	fs := run(digestSource{ps, map[string]checkpoint.Digest{"tokenizer.json": {Algo: checkpoint.SHA256, Value: fmt.Sprintf("%x", pubDigest)}}}, es)
	if len(fs) != 1 || fs[0].Key != "model.merges" {
		t.Errorf("%v", fs)
	}
	if ps.opens["tokenizer.json"] != 1 || es.opens["tokenizer.json"] != 2 {
		t.Errorf("tokenizer.json opened %d (published, to describe) and %d (exported: hash, describe) times", ps.opens["tokenizer.json"], es.opens["tokenizer.json"])
	}
}
