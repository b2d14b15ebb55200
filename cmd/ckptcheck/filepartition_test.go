package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
)

// TestFilePartitions: manifest --partition and validate --hashes
// --partition split the files; merge joins the parts into what one run
// writes, and refuses a set with a part missing (a manifest) or reports it
// (hash reports).
func TestFilePartitions(t *testing.T) {
	dir := tinyCheckpoint(t)
	whole := func(args ...string) string {
		code, out, stderr := ckptcheck(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d, %s", args, code, stderr)
		}
		return out
	}
	save := func(name, body string) string {
		p := filepath.Join(t.TempDir(), name)
		os.WriteFile(p, []byte(body), 0o644)
		return p
	}
	want := whole("manifest", dir)
	for _, n := range []int{1, 2, 3, 7} {
		var parts []string
		for i := range n {
			parts = append(parts, save("m.json", whole("manifest", dir, "--partition", partSpec(i, n))))
		}
		if got := whole(append([]string{"merge"}, parts...)...); got != want {
			t.Errorf("%d parts: the merged manifest differs from one run's", n)
		}
		if n > 1 {
			code, _, stderr := ckptcheck(t, append([]string{"merge"}, parts[1:]...)...)
			if code != 2 || !strings.Contains(stderr, "missing") {
				t.Errorf("%d parts, the first left out: exit %d, %s", n, code, stderr)
			}
		}
	}

	// Hashes need a hub-cache snapshot; one blob is corrupted.
	cache := t.TempDir()
	snap, err := fixture.WriteHubSnapshot(cache, "org/tiny", "c0ffee", dir)
	if err != nil {
		t.Fatal(err)
	}
	blob, _ := filepath.EvalSymlinks(filepath.Join(snap, "model-00002-of-00003.safetensors"))
	b, _ := os.ReadFile(blob)
	b[len(b)-1] ^= 1
	os.WriteFile(blob, b, 0o644)
	code, single, _ := ckptcheck(t, "validate", snap, "--hashes", "--format", "json")
	if code != 1 {
		t.Fatalf("one corrupt blob: exit %d", code)
	}
	var parts []string
	for i := range 3 {
		_, out, stderr := ckptcheck(t, "validate", snap, "--hashes", "--format", "json", "--partition", partSpec(i, 3))
		if out == "" {
			t.Fatal(stderr)
		}
		parts = append(parts, save("r.json", out))
	}
	code, merged, stderr := ckptcheck(t, append([]string{"merge", "--format", "json"}, parts...)...)
	if code != 1 {
		t.Fatalf("merge: exit %d, %s", code, stderr)
	}
	if a, b := findingKeys(t, single), findingKeys(t, merged); a != b {
		t.Errorf("merged findings differ from one run's:\n%s\n%s", b, a)
	}
	code, out, _ := ckptcheck(t, "merge", parts[0], parts[2])
	if code != 1 || !strings.Contains(out, "partition_missing") {
		t.Errorf("a part left out: exit %d\n%s", code, out)
	}
	if code, _, stderr := ckptcheck(t, "validate", snap, "--partition", "0/2", "--format", "json"); code != 2 || !strings.Contains(stderr, "--hashes") {
		t.Errorf("--partition without --hashes: exit %d, %s", code, stderr)
	}
}

func partSpec(i, n int) string { return fmt.Sprintf("%d/%d", i, n) }

// findingKeys lists a JSON report's findings as "code severity file key".
func findingKeys(t *testing.T, report string) string {
	t.Helper()
	var r struct {
		Findings []struct{ Code, Severity, File, Key string }
	}
	if err := json.Unmarshal([]byte(report), &r); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, f := range r.Findings {
		lines = append(lines, f.Code+" "+f.Severity+" "+f.File+" "+f.Key)
	}
	return strings.Join(lines, "\n")
}
