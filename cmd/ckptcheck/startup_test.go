package main

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestStartupInit keeps package initialisation cheap: a run of the binary
// (ckptcheck --version from a script or hook) pays for every linked
// package's init before main, so templates, regexps and tables are made
// when first needed (sync.OnceValue), not at start-up. It reads
// GODEBUG=inittrace=1 of this test binary, which links the same packages.
func TestStartupInit(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	// At most this many allocations in a package's init: the HTML
	// template alone made over a thousand.
	const maxAllocs = 100
	seen := 0
	for _, line := range strings.Split(string(out), "\n") {
		// init PKG @T ms, C ms clock, B bytes, A allocs
		f := strings.Fields(line)
		if len(f) < 10 || f[0] != "init" {
			continue
		}
		switch f[1] {
		case "github.com/ckptcheck/ckptcheck/report", "github.com/ckptcheck/ckptcheck/adapter", "github.com/ckptcheck/ckptcheck/verify":
			seen++
			if n, err := strconv.Atoi(f[9]); err != nil || n > maxAllocs {
				t.Errorf("%s: %s allocations at init, want at most %d: %s", f[1], f[9], maxAllocs, line)
			}
		}
	}
	if seen != 3 {
		t.Errorf("%d of the 3 packages in the init trace:\n%s", seen, out)
	}
}
