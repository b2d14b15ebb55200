package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// trainerExport writes the tiny model under a trainer's own module names,
// which no preset knows.
func trainerExport(t *testing.T) string {
	t.Helper()
	r := strings.NewReplacer("model.layers.", "net.blocks.", "self_attn.", "attn.", "q_proj", "query", "k_proj", "key",
		"v_proj", "value", "o_proj", "out", "mlp.", "ffn.", "gate_proj", "w1", "up_proj", "w3", "down_proj", "w2",
		"input_layernorm", "norm1", "post_attention_layernorm", "norm2", "model.embed_tokens", "net.embed", "model.norm", "net.norm")
	var ts []fixture.Tensor
	for _, x := range fixture.Tiny.Tensors(safetensors.BF16) {
		x.Name = r.Replace(x.Name)
		ts = append(ts, x)
	}
	dir := t.TempDir()
	if err := fixture.WriteFile(filepath.Join(dir, "model.safetensors"), ts, nil); err != nil {
		t.Fatal(err)
	}
	return dir
}

// jsonReport is the part of a diff's JSON these tests compare.
type jsonReport struct {
	OK     bool `json:"ok"`
	Inputs []struct {
		Adapter  string          `json:"adapter"`
		Inferred json.RawMessage `json:"inferred"`
	} `json:"inputs"`
	Findings []struct {
		Code, Severity, Key, Side string
	} `json:"findings"`
}

func diffJSON(t *testing.T, args ...string) jsonReport {
	t.Helper()
	code, out, stderr := ckptcheck(t, append([]string{"diff", "--format", "json"}, args...)...)
	var r jsonReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v: exit %d, %v\n%s%s", args, code, err, out, stderr)
	}
	return r
}

// TestWriteAdapter: --write-adapter writes the inferred adapter, refuses a
// file that exists, and the file, loaded with --adapter-file, gives the
// same findings; --explain inferred prints it.
func TestWriteAdapter(t *testing.T) {
	pub, exp := tinyCheckpoint(t), trainerExport(t)
	file := filepath.Join(t.TempDir(), "trainer.adapter")
	inferred := diffJSON(t, pub, exp, "--adapter", "exported=infer", "--values", "--write-adapter", file)
	if in := inferred.Inputs[1]; in.Adapter != "infer" || !strings.Contains(string(in.Inferred), `"rules"`) || !strings.Contains(string(in.Inferred), `"sample_bytes"`) {
		t.Errorf("inputs[1]: adapter %q, inferred %s", in.Adapter, in.Inferred)
	}
	text, err := os.ReadFile(file)
	if err != nil || !strings.Contains(string(text), "name   inferred") || !strings.Contains(string(text), "covers inferred from published") {
		t.Fatalf("written adapter (%v):\n%s", err, text)
	}
	if !inferred.OK {
		t.Errorf("inferred diff fails: %+v\n%s", inferred.Findings, text)
	}

	// An existing file is never overwritten.
	code, _, stderr := ckptcheck(t, "diff", pub, exp, "--adapter", "exported=infer", "--write-adapter", file)
	if code == 0 || !strings.Contains(stderr, "never overwritten") {
		t.Errorf("second --write-adapter: exit %d, %s", code, stderr)
	}
	if again, _ := os.ReadFile(file); string(again) != string(text) {
		t.Error("second --write-adapter changed the file")
	}

	back := diffJSON(t, pub, exp, "--adapter-file", file, "--adapter", "exported=inferred", "--values")
	if back.Inputs[1].Adapter != "inferred" || back.OK != inferred.OK || !slices.Equal(back.Findings, inferred.Findings) {
		t.Errorf("the written adapter's report differs:\n%+v\nwant\n%+v", back, inferred)
	}

	code, out, stderr := ckptcheck(t, "diff", pub, exp, "--adapter", "exported=infer", "--explain", "inferred")
	if code != 0 || out != string(text) {
		t.Errorf("--explain inferred: exit %d (%s)\n%s\nwant the written adapter\n%s", code, stderr, out, text)
	}
}

// TestWritePublishedAdapter: --adapter published=infer infers the names of
// a checkpoint published in a trainer's names against an HF export; the
// report says so of inputs[0], the findings keep HF keys, and the written
// adapter, loaded as --adapter published=FILE's name, gives the same
// report. Both sides cannot infer.
func TestWritePublishedAdapter(t *testing.T) {
	pub, exp := trainerExport(t), tinyCheckpoint(t)
	file := filepath.Join(t.TempDir(), "trainer.adapter")
	inferred := diffJSON(t, pub, exp, "--adapter", "published=infer", "--values", "--write-adapter", file)
	if in := inferred.Inputs[0]; in.Adapter != "infer" || !strings.Contains(string(in.Inferred), `"rules"`) || inferred.Inputs[1].Inferred != nil {
		t.Errorf("inputs: %+v", inferred.Inputs)
	}
	text, err := os.ReadFile(file)
	if err != nil || !strings.Contains(string(text), "rename net.blocks.{i0}.attn.query.weight model.layers.{i0}.self_attn.q_proj.weight") {
		t.Fatalf("written adapter (%v):\n%s", err, text)
	}
	if !inferred.OK {
		t.Errorf("inferred diff fails: %+v\n%s", inferred.Findings, text)
	}
	for _, f := range inferred.Findings {
		if strings.Contains(f.Key, "net.") {
			t.Errorf("finding of a trainer's name: %+v", f)
		}
	}
	back := diffJSON(t, pub, exp, "--adapter-file", file, "--adapter", "published=inferred", "--values")
	if back.Inputs[0].Adapter != "inferred" || back.OK != inferred.OK || !slices.Equal(back.Findings, inferred.Findings) {
		t.Errorf("the written adapter's report differs:\n%+v\nwant\n%+v", back, inferred)
	}
	code, _, stderr := ckptcheck(t, "diff", pub, exp, "--adapter", "published=infer", "--adapter", "exported=infer")
	if code != 2 || !strings.Contains(stderr, "infer one side") {
		t.Errorf("both sides infer: exit %d, %s", code, stderr)
	}
}
