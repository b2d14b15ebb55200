package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Hostile files beside the weights: huge tokenizers, configs with a
// million keys, a huge chat template. Each is compared within bounded
// findings and, measured on the built CLI with the collector on
// (GOGC=100), bounded memory. The sizes are small by default so that the
// test is fast; CKPTCHECK_BIG=1 generates them at full size (a 95 MB
// tokenizer.json pair, a million-key config, a 40 MB template, a 16 MB
// config), where peak RSS must stay within 256 MiB.

// sideFileScale is 1 for the full-size cases, smaller by default.
func sideFileScale() float64 {
	if os.Getenv("CKPTCHECK_BIG") == "1" {
		return 1
	}
	return 0.02
}

// writeBigTokenizer writes a tokenizer.json of about size bytes whose
// vocabulary differs from the base one (changed == 0) in changed tokens.
func writeBigTokenizer(t *testing.T, path string, size int, changed int) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	fmt.Fprint(w, `{"version": "1.0", "added_tokens": [{"id": 0, "content": "<s>", "special": true}], "normalizer": null, "model": {"type": "BPE", "vocab": {`)
	n := size / 2 / 24 // vocab and merges share the bytes
	for i := range n {
		if i > 0 {
			w.WriteByte(',')
		}
		tok := fmt.Sprintf("tok%012d", i)
		if i < changed {
			tok = fmt.Sprintf("new%012d", i)
		}
		fmt.Fprintf(w, "%q: %d", tok, i)
	}
	fmt.Fprint(w, `}, "merges": [`)
	for i := range n {
		if i > 0 {
			w.WriteByte(',')
		}
		fmt.Fprintf(w, `"t%09d o%09d"`, i, i)
	}
	fmt.Fprint(w, "]}}")
	if err := errorsJoin(w.Flush(), f.Close()); err != nil {
		t.Fatal(err)
	}
}

func errorsJoin(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// writeManyKeys writes config.json: the tiny fixture's fields plus keys
// extra fields, each with value offset+i.
func writeManyKeys(t *testing.T, dir string, keys, offset int) {
	t.Helper()
	path := filepath.Join(dir, "config.json")
	var base map[string]json.RawMessage
	b, err := os.ReadFile(path)
	if err != nil || json.Unmarshal(b, &base) != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	w.WriteByte('{')
	for k, v := range base {
		fmt.Fprintf(w, "%q: %s, ", k, v)
	}
	for i := range keys {
		if i > 0 {
			w.WriteString(", ")
		}
		fmt.Fprintf(w, `"extra_field_%d": %d`, i, offset+i)
	}
	w.WriteByte('}')
	if err := errorsJoin(w.Flush(), f.Close()); err != nil {
		t.Fatal(err)
	}
}

// writeTemplate writes tokenizer_config.json with a chat template of size
// bytes whose last byte is last.
func writeTemplate(t *testing.T, path string, size int, last byte) {
	t.Helper()
	tmpl := strings.Repeat("{{ m.content }}\n", size/16) + string(last)
	b, _ := json.Marshal(map[string]any{"eos_token": "</s>", "chat_template": tmpl})
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

type sideCase struct {
	name     string
	args     []string
	maxFinds int    // findings bound
	want     string // a message some finding must contain
}

// sideFileCases writes the hostile checkpoints under dir at scale.
func sideFileCases(t *testing.T, scale float64) []sideCase {
	pub, exp := tinyCheckpoint(t), tinyCheckpoint(t)
	tokPub, tokExp := tinyCheckpoint(t), tinyCheckpoint(t)
	tmplPub, tmplExp := tinyCheckpoint(t), tinyCheckpoint(t)
	valid := tinyCheckpoint(t)

	tokSize := int(95e6 * scale)
	writeBigTokenizer(t, filepath.Join(tokPub, "tokenizer.json"), tokSize, 0)
	writeBigTokenizer(t, filepath.Join(tokExp, "tokenizer.json"), tokSize, 5)

	keys := int(1e6 * scale)
	writeManyKeys(t, pub, keys, 0)
	writeManyKeys(t, exp, keys, 1)

	tmplSize := int(40e6 * scale)
	writeTemplate(t, filepath.Join(tmplPub, "tokenizer_config.json"), tmplSize, 'a')
	writeTemplate(t, filepath.Join(tmplExp, "tokenizer_config.json"), tmplSize, 'b')

	writeManyKeys(t, valid, int(16e6/26*scale), 0) // ~26 bytes a field

	return []sideCase{
		{"tokenizer", []string{"diff", tokPub, tokExp}, 10, "the vocab changed"},
		{"config keys", []string{"diff", pub, exp}, 110, "more fields changed"},
		{"template", []string{"diff", tmplPub, tmplExp}, 10, "the chat template changed"},
		{"validate config", []string{"validate", valid}, 10, ""},
	}
}

type jsonFinding struct {
	Code, Severity, Key, Message string
}

func findingsOf(t *testing.T, out string) []jsonFinding {
	t.Helper()
	var r struct{ Findings []jsonFinding }
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v: %.500s", err, out)
	}
	return r.Findings
}

func checkSideCase(t *testing.T, c sideCase, out string) {
	t.Helper()
	fs := findingsOf(t, out)
	if len(fs) > c.maxFinds {
		t.Errorf("%s: %d findings, want at most %d", c.name, len(fs), c.maxFinds)
	}
	if c.want == "" {
		return
	}
	for _, f := range fs {
		if strings.Contains(f.Message, c.want) {
			return
		}
	}
	t.Errorf("%s: no finding says %q: %+v", c.name, c.want, fs[:min(len(fs), 20)])
}

func TestHostileSideFilesBounded(t *testing.T) {
	for _, c := range sideFileCases(t, sideFileScale()) {
		_, out, stderr := ckptcheck(t, append(c.args, "--format", "json")...)
		if stderr != "" && !strings.Contains(out, "findings") {
			t.Errorf("%s: %s", c.name, stderr)
			continue
		}
		checkSideCase(t, c, out)
	}
}
