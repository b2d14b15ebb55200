package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
)

// TestMergeRewrittenParts: a partial manifest is recognised by its schema
// however it was rewritten (jq -c, keys reordered), and a part of any kind
// claiming a count no run makes ends with exit 2 and one line, not a panic.
func TestMergeRewrittenParts(t *testing.T) {
	dir := tinyCheckpoint(t)
	tmp := t.TempDir()
	run := func(args ...string) string {
		t.Helper()
		code, out, stderr := ckptcheck(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d, %s", args, code, stderr)
		}
		return out
	}
	save := func(name string, b []byte) string {
		p := filepath.Join(tmp, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// edit decodes a part, changes it and writes it compact, keys sorted
	// (so "schema" is no longer first).
	edit := func(name, doc string, change func(m map[string]any)) string {
		var m map[string]any
		if err := json.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatal(err)
		}
		if change != nil {
			change(m)
		}
		b, _ := json.Marshal(m)
		if bytes.Contains(b, []byte(`"schema": "`)) {
			t.Fatal("not compact")
		}
		return save(name, b)
	}
	want := run("manifest", dir)
	m0, m1 := run("manifest", dir, "--partition", "0/2"), run("manifest", dir, "--partition", "1/2")
	compact := []string{edit("m0.json", m0, nil), edit("m1.json", m1, nil)}
	if got := run(append([]string{"merge"}, compact...)...); got != want {
		t.Errorf("compact parts: the merged manifest differs from one run's:\n%s", got)
	}

	setPart := func(key string, v any) func(map[string]any) {
		return func(m map[string]any) { m["partition"].(map[string]any)[key] = v }
	}
	snap, err := fixture.WriteHubSnapshot(t.TempDir(), "org/tiny", "c0ffee", dir)
	if err != nil {
		t.Fatal(err)
	}
	h0 := run("validate", snap, "--hashes", "--format", "json", "--partition", "0/2")
	h1 := run("validate", snap, "--hashes", "--format", "json", "--partition", "1/2")
	tests := []struct {
		name  string
		parts []string
		says  string
	}{
		{"manifest count -1", []string{edit("a.json", m0, setPart("count", -1)), compact[1]}, "is not a partition"},
		{"manifest count 2^62", []string{edit("b.json", m0, setPart("count", 1<<62)), compact[1]}, "is not a partition"},
		{"manifest count 10^8", []string{edit("c.json", m0, setPart("count", 100_000_000)), compact[1]}, "is not a partition"},
		{"validate structural -1", []string{edit("d.json", h0, setPart("structural", -1)), save("h1.json", []byte(h1))}, "structural findings"},
		{"validate structural 2^62", []string{edit("e.json", h0, setPart("structural", 1<<62)), save("h1.json", []byte(h1))}, "structural findings"},
	}
	for _, tt := range tests {
		code, _, stderr := ckptcheck(t, append([]string{"merge"}, tt.parts...)...)
		if code != 2 || !strings.Contains(stderr, tt.says) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%s: exit %d, stderr %q; want 2 and one line saying %q", tt.name, code, stderr, tt.says)
		}
	}
}
