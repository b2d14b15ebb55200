package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
)

// TestUnreadableInputs runs the binary as an unprivileged user (CI runs as
// root, and root reads a mode-000 file): an unreadable file is exit 2 with
// one line naming it, however it was reached.
func TestUnreadableInputs(t *testing.T) {
	setpriv, err := exec.LookPath("setpriv")
	if os.Geteuid() != 0 || err != nil {
		t.Skip("needs root and setpriv to run as an unprivileged user")
	}
	bin := filepath.Join(t.TempDir(), "ckptcheck")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	root := t.TempDir()
	for _, d := range []string{filepath.Dir(bin), filepath.Dir(filepath.Dir(bin)), root, filepath.Dir(root)} {
		os.Chmod(d, 0o755) // the unprivileged user must reach the files
	}
	dir := filepath.Join(root, "ckpt")
	if err := fixture.WritePublished(dir, fixture.Tiny); err != nil {
		t.Fatal(err)
	}
	shard := filepath.Join(dir, "model-00002-of-00003.safetensors")
	if err := os.Chmod(shard, 0); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"validate", shard},
		{"validate", dir},
		{"validate", filepath.Join(dir, "model.safetensors.index.json")},
		{"inspect", dir},
		{"diff", dir, dir},
	} {
		cmd := exec.Command(setpriv, append([]string{"--reuid=65534", "--regid=65534", "--clear-groups", bin}, args...)...)
		out, _ := cmd.CombinedOutput()
		got := strings.TrimSpace(string(out))
		if cmd.ProcessState.ExitCode() != 2 || strings.Count(got, "\n") > 0 || !strings.Contains(got, shard) || !strings.Contains(got, "permission denied") {
			t.Errorf("%v: exit %d, %q; want exit 2 and one line naming %s", args, cmd.ProcessState.ExitCode(), got, shard)
		}
	}
}
