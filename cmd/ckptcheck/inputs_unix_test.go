//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
)

// TestSpecialInputFiles: every path read whole, named by a flag, by the
// configuration file or found in the hub cache, is refused when it is a
// FIFO (which would block the open forever), a device (/dev/zero is
// endless) or over its cap: exit 2, one line naming the path and what it
// is, at once.
func TestSpecialInputFiles(t *testing.T) {
	clearPartitionEnv(t)
	pub, _ := filepath.Abs("../../testdata/published")
	exp, _ := filepath.Abs("../../testdata/exported")
	dir := t.TempDir()
	t.Chdir(dir)
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFOs:", err)
	}
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip(err)
	}
	// Over every cap, and sparse: no disk used.
	huge := filepath.Join(dir, "huge")
	if f, err := os.Create(huge); err != nil || f.Truncate(1<<30+1) != nil || f.Close() != nil {
		t.Skip("no sparse file:", err)
	}

	cache := t.TempDir()
	t.Setenv("HF_HUB_CACHE", cache)
	if _, err := fixture.WriteHubSnapshot(cache, "org/tiny", "c0ffee", tinyCheckpoint(t)); err != nil {
		t.Fatal(err)
	}
	ref := filepath.Join(cache, "models--org--tiny", "refs", "main")

	const fifoMsg, devMsg = "is a named pipe (FIFO), not a regular file", "is a character device, not a regular file"
	tests := []struct {
		name string
		// setup, when set, runs first: it writes .ckptcheck.yaml or
		// replaces the hub ref by the path.
		setup func(path string)
		args  func(path string) []string
		kind  string // how the error names the file
	}{
		{name: "policy", args: func(p string) []string { return []string{"diff", "--values", "--policy", p, pub, exp} }, kind: "--policy"},
		{name: "policy in a partition", args: func(p string) []string {
			return []string{"diff", "--values", "--partition", "1/2", "--format", "json", "--policy", p, pub, exp}
		}, kind: "--policy"},
		{name: "adapter file", args: func(p string) []string { return []string{"diff", "--adapter-file", p, pub, exp} }, kind: "--adapter-file"},
		{name: "manifest", args: func(p string) []string { return []string{"validate", "--manifest", p, pub} }, kind: "--manifest"},
		{name: "merge input", args: func(p string) []string { return []string{"merge", p} }, kind: "merge input"},
		{name: "config", args: func(p string) []string { return []string{"validate", "--config", p, pub} }, kind: "--config"},
		{name: ".ckptcheck.yaml", setup: func(p string) { os.Symlink(p, ".ckptcheck.yaml") },
			args: func(string) []string { return []string{"validate", pub} }, kind: "--config"},
		{name: "policy in .ckptcheck.yaml", setup: func(p string) {
			os.WriteFile(".ckptcheck.yaml", []byte("diff:\n  values: true\n  policy: "+p+"\n"), 0o644)
		}, args: func(string) []string { return []string{"diff", pub, exp} }, kind: "--policy"},
		{name: "adapter file in .ckptcheck.yaml", setup: func(p string) {
			os.WriteFile(".ckptcheck.yaml", []byte("diff:\n  adapter-file: ["+p+"]\n"), 0o644)
		}, args: func(string) []string { return []string{"diff", pub, exp} }, kind: "--adapter-file"},
		{name: "hub cache ref", setup: func(p string) {
			os.Remove(ref)
			os.Symlink(p, ref)
		}, args: func(string) []string { return []string{"validate", "org/tiny"} }, kind: "hub cache ref"},
	}
	for _, tt := range tests {
		for _, in := range []struct{ path, msg string }{
			{fifo, fifoMsg},
			{"/dev/zero", devMsg},
			{huge, "file is larger than "},
		} {
			t.Run(tt.name+" "+filepath.Base(in.path), func(t *testing.T) {
				os.Remove(".ckptcheck.yaml")
				if tt.setup != nil {
					tt.setup(in.path)
				}
				defer os.Remove(".ckptcheck.yaml")
				code, stderr, took := ckptcheckWithin(t, tt.args(in.path)...)
				// Named by the path read, not the link's target.
				path := in.path
				switch tt.name {
				case "hub cache ref":
					path = ref
				case ".ckptcheck.yaml":
					path = ".ckptcheck.yaml"
				}
				want := tt.kind + " " + path + ": " + in.msg
				if code != 2 || !strings.Contains(stderr, want) || strings.Count(stderr, "\n") != 1 {
					t.Errorf("exit %d, stderr %q; want 2 and one line with %q", code, stderr, want)
				}
				if took > 5*time.Second {
					t.Errorf("took %v", took)
				}
			})
		}
	}
}

// ckptcheckWithin runs the command, failing the test instead of hanging
// when it does not end within seconds.
func ckptcheckWithin(t *testing.T, args ...string) (code int, stderr string, took time.Duration) {
	t.Helper()
	type result struct {
		code   int
		stderr string
	}
	done := make(chan result, 1)
	start := time.Now()
	go func() {
		code, _, stderr := ckptcheck(t, args...)
		done <- result{code, stderr}
	}()
	select {
	case r := <-done:
		return r.code, r.stderr, time.Since(start)
	case <-time.After(20 * time.Second):
		t.Fatalf("%v did not end", args)
		return 0, "", 0
	}
}
