package main

import (
	"os"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/adapter"
	"github.com/ckptcheck/ckptcheck/verify"
)

// TestReadmeDocumentsEverything keeps the README true: every finding code,
// command and flag must appear in it.
func TestReadmeDocumentsEverything(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	for _, c := range verify.Codes() {
		if !strings.Contains(readme, "| `"+string(c.Code)+"` | "+c.Severity.String()+" |") {
			t.Errorf("README lacks a table row for code %s (%s)", c.Code, c.Severity)
		}
	}
	for _, cmd := range newApp(nil, nil).Commands {
		if !strings.Contains(readme, "`ckptcheck "+cmd.Name) {
			t.Errorf("README does not document command %s", cmd.Name)
		}
		for _, f := range cmd.Flags {
			for _, name := range f.Names() {
				flag := "--" + name
				if len(name) == 1 {
					flag = "-" + name
				}
				if name != "help" && name != "h" && !strings.Contains(readme, "`"+flag) {
					t.Errorf("README does not document %s %s", cmd.Name, flag)
				}
			}
		}
	}
}

// TestExampleIsWhatGenWrites checks that the committed example checkpoints
// are exactly what `go run ./testdata/gen` writes.
func TestExampleIsWhatGenWrites(t *testing.T) {
	dir := t.TempDir()
	if err := writeExample(dir); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"published/config.json", "published/model.safetensors.index.json",
		"published/model-00001-of-00003.safetensors", "published/model-00002-of-00003.safetensors",
		"published/model-00003-of-00003.safetensors", "exported/config.json", "exported/model-00001-of-00001.safetensors"} {
		want, err := os.ReadFile(dir + "/" + f)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile("../../testdata/" + f)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("testdata/%s differs from what testdata/gen writes; run make testdata", f)
		}
	}
}

// TestReadmeAdapterExampleParses keeps the README's adapter file valid.
func TestReadmeAdapterExampleParses(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "**Your own adapters**")
	if !ok {
		t.Fatal("README has no adapter example")
	}
	_, rest, _ = strings.Cut(rest, "```\n")
	example, _, _ := strings.Cut(rest, "```")
	a, err := adapter.Parse("README", example)
	if err != nil {
		t.Fatal(err)
	}
	if a.Name != "student" || a.Doc == "" {
		t.Errorf("%+v", a)
	}
}
