package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestHostileSideFilesMemory measures the built CLI's peak RSS on each
// hostile case with the collector on (GOGC=100). The CLI is started by a
// small helper process (this test binary again): a child's maxrss starts
// at its parent's, and this test's is large after generating the files.
// Skipped under -short; the bound is asserted at full size
// (CKPTCHECK_BIG=1), the figures logged at any size.
func TestHostileSideFilesMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the CLI")
	}
	bin := filepath.Join(t.TempDir(), "ckptcheck")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	scale := sideFileScale()
	const limit = 256 << 20
	for _, c := range sideFileCases(t, scale) {
		args, _ := json.Marshal(append([]string{bin}, append(c.args, "--format", "json")...))
		outFile := filepath.Join(t.TempDir(), "out.json")
		helper := exec.Command(os.Args[0], "-test.run=^TestRSSHelper$")
		helper.Env = append(os.Environ(), "CKPTCHECK_RSS_ARGS="+string(args), "CKPTCHECK_RSS_OUT="+outFile)
		got, err := helper.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: helper: %v\n%s", c.name, err, got)
		}
		_, after, ok := strings.Cut(string(got), "maxrss=")
		rss, err := strconv.ParseInt(strings.Fields(after + " ")[0], 10, 64)
		if !ok || err != nil {
			t.Fatalf("%s: helper said %s", c.name, got)
		}
		out, _ := os.ReadFile(outFile)
		checkSideCase(t, c, string(out))
		t.Logf("%s (scale %g): peak RSS %d MiB", c.name, scale, rss>>20)
		if scale == 1 && rss > limit {
			t.Errorf("%s: peak RSS %d MiB, want at most %d MiB", c.name, rss>>20, limit>>20)
		}
	}
}

// TestRSSHelper runs the command in CKPTCHECK_RSS_ARGS with GOGC=100, its
// output to CKPTCHECK_RSS_OUT, and prints its peak RSS; it does nothing
// in an ordinary run.
func TestRSSHelper(t *testing.T) {
	var args []string
	if json.Unmarshal([]byte(os.Getenv("CKPTCHECK_RSS_ARGS")), &args) != nil || len(args) == 0 {
		return
	}
	out, err := os.Create(os.Getenv("CKPTCHECK_RSS_OUT"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), "GOGC=100")
	cmd.Stdout = out
	if err := cmd.Run(); err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatal(err)
		}
	}
	os.Stdout.WriteString("maxrss=" + strconv.FormatInt(cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss<<10, 10) + "\n")
}
