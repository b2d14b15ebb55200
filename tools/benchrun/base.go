package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// buildBase builds ckptcheck as of the git revision rev into scratch and
// returns the binary's path and a description of the revision. The
// revision's files are exported with git archive into scratch, so neither
// the repository's work tree nor its worktree list is touched.
func buildBase(rev, scratch string) (bin, desc string, err error) {
	commit, err := gitOutput("rev-parse", "--verify", "--end-of-options", rev+"^{commit}")
	if err != nil {
		return "", "", fmt.Errorf("base %q: %w", rev, err)
	}
	if desc, err = gitOutput("log", "-1", "--format=%h %s", commit); err != nil {
		return "", "", err
	}
	src := filepath.Join(scratch, "base-src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return "", "", err
	}
	defer os.RemoveAll(src)
	tarball := filepath.Join(scratch, "base.tar")
	defer os.Remove(tarball)
	// From the repository's top: git archive in a subdirectory (tools/,
	// where make bench runs this) archives only that folder.
	top, err := gitOutput("rev-parse", "--show-toplevel")
	if err != nil {
		return "", "", err
	}
	if _, err := gitOutput("-C", top, "archive", "--format=tar", "-o", tarball, commit); err != nil {
		return "", "", err
	}
	if out, err := exec.Command("tar", "-x", "-f", tarball, "-C", src).CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("tar: %v\n%s", err, out)
	}
	bin = filepath.Join(scratch, "ckptcheck-base")
	build := exec.Command(goTool(), "build", "-o", bin, "./cmd/ckptcheck")
	build.Dir = src
	build.Env = append(os.Environ(), "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("building base %s (%s): %v\n%s", rev, desc, err, out)
	}
	return bin, rev + " = " + desc, nil
}

func gitOutput(args ...string) (string, error) {
	out, err := exec.Command("git", args...).Output()
	if err != nil {
		if exit, ok := err.(*exec.ExitError); ok {
			return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(exit.Stderr)))
		}
		return "", fmt.Errorf("git %s: %v", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}

// goTool is the go command on PATH, where go run puts the toolchain that
// runs this program.
func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return "go"
}
