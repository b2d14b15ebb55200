package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestCIDocCommands keeps docs/ci.md true: every ckptcheck command line in
// it uses a command and flags that exist.
func TestCIDocCommands(t *testing.T) {
	b, err := os.ReadFile("../../docs/ci.md")
	if err != nil {
		t.Fatal(err)
	}
	flags := map[string][]string{}
	for _, c := range newApp(nil, nil).Commands {
		for _, f := range c.Flags {
			flags[c.Name] = append(flags[c.Name], f.Names()...)
		}
	}
	line := regexp.MustCompile(`ckptcheck (diff|validate|inspect)\b([^\n` + "`" + `]*)`)
	found := 0
	doc := regexp.MustCompile(`\\\n\s*`).ReplaceAllString(string(b), " ") // join continued lines
	for _, m := range line.FindAllStringSubmatch(doc, -1) {
		found++
		for _, tok := range strings.Fields(m[2]) {
			if name, ok := strings.CutPrefix(tok, "--"); ok && !slices.Contains(flags[m[1]], name) {
				t.Errorf("docs/ci.md: ckptcheck %s has no flag --%s", m[1], name)
			}
		}
		for _, f := range []string{"github", "junit", "sarif", "markdown"} {
			if strings.Contains(m[2], "--format "+f) {
				flags["format:"+f] = nil
			}
		}
	}
	if found < 3 {
		t.Errorf("docs/ci.md has %d ckptcheck command lines", found)
	}
	for _, f := range []string{"github", "junit", "sarif"} {
		if _, ok := flags["format:"+f]; !ok {
			t.Errorf("docs/ci.md shows no run with --format %s", f)
		}
	}
}

// TestPreCommitHook reads .pre-commit-hooks.yaml and runs its entry on the
// files its pattern picks, as pre-commit does.
func TestPreCommitHook(t *testing.T) {
	b, err := os.ReadFile("../../.pre-commit-hooks.yaml")
	if err != nil {
		t.Fatal(err)
	}
	hook := map[string]string{}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(l), "- "), ": "); ok && !strings.HasPrefix(l, "#") {
			hook[k] = strings.Trim(v, `'"`)
		}
	}
	if hook["id"] != "ckptcheck-validate" || hook["language"] != "golang" || hook["entry"] != "ckptcheck validate" {
		t.Fatalf("hook %v", hook)
	}
	files := regexp.MustCompile(hook["files"])
	dir := tinyCheckpoint(t)
	var staged []string
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if files.MatchString(e.Name()) {
			staged = append(staged, filepath.Join(dir, e.Name()))
		}
	}
	// The three shards and the index; not config.json.
	if len(staged) != 4 || !files.MatchString("model.safetensors.index.json") || files.MatchString("config.json") || files.MatchString("a.safetensors.bak") {
		t.Fatalf("the pattern picks %v", staged)
	}
	args := append(strings.Fields(hook["entry"])[1:], staged...)
	if code, out, stderr := ckptcheck(t, args...); code != 0 {
		t.Errorf("the hook fails good files: exit %d\n%s%s", code, out, stderr)
	}
	shard := staged[0]
	st, _ := os.Stat(shard)
	os.Truncate(shard, st.Size()-3)
	if code, out, _ := ckptcheck(t, args...); code != 1 || !strings.Contains(out, "metadata_incomplete_buffer") {
		t.Errorf("the hook passes a truncated shard: exit %d\n%s", code, out)
	}
}
