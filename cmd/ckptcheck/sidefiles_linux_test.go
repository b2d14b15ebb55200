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

	"github.com/ckptcheck/ckptcheck/internal/fixture"
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
		rss, out := peakRSS(t, c.name, "100", append([]string{bin}, append(c.args, "--format", "json")...))
		checkSideCase(t, c, out)
		t.Logf("%s (scale %g): peak RSS %d MiB", c.name, scale, rss>>20)
		if scale == 1 && rss > limit {
			t.Errorf("%s: peak RSS %d MiB, want at most %d MiB", c.name, rss>>20, limit>>20)
		}
	}
}

// peakRSS runs args through TestRSSHelper and returns the command's peak
// RSS and its output; gogc is "100" or "default" (the tool's own setting).
func peakRSS(t *testing.T, name, gogc string, args []string) (int64, string) {
	t.Helper()
	js, _ := json.Marshal(args)
	outFile := filepath.Join(t.TempDir(), "out.json")
	helper := exec.Command(os.Args[0], "-test.run=^TestRSSHelper$")
	helper.Env = append(os.Environ(), "CKPTCHECK_RSS_ARGS="+string(js), "CKPTCHECK_RSS_OUT="+outFile, "CKPTCHECK_RSS_GOGC="+gogc)
	got, err := helper.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: helper: %v\n%s", name, err, got)
	}
	_, after, ok := strings.Cut(string(got), "maxrss=")
	rss, err := strconv.ParseInt(strings.Fields(after + " ")[0], 10, 64)
	if !ok || err != nil {
		t.Fatalf("%s: helper said %s", name, got)
	}
	out, _ := os.ReadFile(outFile)
	return rss, string(out)
}

// TestMaxHeaderMemory measures validate and a header-only diff of the
// largest header the reference accepts (100 MB, ~885K tensors) with the
// tool's own collector setting: at most 400 MiB and 800 MiB peak RSS. Only
// with CKPTCHECK_BIG=1 (it writes 200 MB).
func TestMaxHeaderMemory(t *testing.T) {
	if os.Getenv("CKPTCHECK_BIG") != "1" {
		t.Skip("CKPTCHECK_BIG=1 writes two 100 MB headers")
	}
	bin := filepath.Join(t.TempDir(), "ckptcheck")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	for _, d := range []string{a, b} {
		if err := fixture.WriteMaxHeader(filepath.Join(d, "model.safetensors")); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name  string
		args  []string
		limit int64
	}{
		{"validate", []string{bin, "validate", a}, 400 << 20},
		{"diff", []string{bin, "diff", a, b}, 800 << 20},
	} {
		rss, out := peakRSS(t, c.name, "default", c.args)
		t.Logf("%s of the 100 MB header: peak RSS %d MiB", c.name, rss>>20)
		if !strings.HasPrefix(out, "OK") {
			t.Errorf("%s: %.300s", c.name, out)
		}
		if rss > c.limit {
			t.Errorf("%s: peak RSS %d MiB, want at most %d MiB", c.name, rss>>20, c.limit>>20)
		}
	}
}

// TestRSSHelper runs the command in CKPTCHECK_RSS_ARGS with GOGC=100 (the
// tool's own collector setting when CKPTCHECK_RSS_GOGC is "default"), its
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
	cmd.Env = os.Environ()
	if os.Getenv("CKPTCHECK_RSS_GOGC") != "default" {
		cmd.Env = append(cmd.Env, "GOGC=100")
	}
	cmd.Stdout = out
	if err := cmd.Run(); err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatal(err)
		}
	}
	os.Stdout.WriteString("maxrss=" + strconv.FormatInt(cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss<<10, 10) + "\n")
}
