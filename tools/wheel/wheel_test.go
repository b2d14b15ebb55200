package main

import (
	"archive/zip"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// tinyDist builds a small program for the six platforms, named as make
// dist names its binaries: the wheel writer only zips what it is given,
// so a real ckptcheck build (minutes) is not needed to test it.
func tinyDist(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	os.MkdirAll(src, 0o755)
	os.WriteFile(filepath.Join(src, "go.mod"), []byte("module tiny\n\ngo 1.26\n"), 0o644)
	os.WriteFile(filepath.Join(src, "main.go"), []byte("package main\n\nfunc main() { println(\"ckptcheck\") }\n"), 0o644)
	for _, p := range platforms {
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w -buildid=", "-o", filepath.Join(dir, p.binary()), ".")
		cmd.Dir = src
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.goos, "GOARCH="+p.goarch, "GOFLAGS=")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s/%s: %v\n%s", p.goos, p.goarch, err, out)
		}
	}
	return dir
}

func TestWheels(t *testing.T) {
	dist := tinyDist(t)
	out, again := t.TempDir(), t.TempDir()
	pkg, readme := "../../python/ckptcheck", "../../README.md"
	if err := run(dist, out, pkg, readme, "v1.2.3", 7, "", "UNKNOWN"); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TZ", "Pacific/Kiritimati") // the bytes do not depend on where
	if err := run(dist, again, pkg, readme, "v1.2.3", 7, "", "UNKNOWN"); err != nil {
		t.Fatal(err)
	}
	wheels, _ := filepath.Glob(filepath.Join(out, "*.whl"))
	if len(wheels) != 6 {
		t.Fatalf("%d wheels: %v", len(wheels), wheels)
	}
	for _, w := range wheels {
		if err := verifyWheel(w); err != nil {
			t.Error(err)
		}
		a, _ := os.ReadFile(w)
		b, _ := os.ReadFile(filepath.Join(again, filepath.Base(w)))
		if !bytes.Equal(a, b) {
			t.Errorf("%s: two runs differ", filepath.Base(w))
		}
	}
	for _, name := range []string{
		"ckptcheck-1.2.3-py3-none-manylinux_2_17_x86_64.musllinux_1_1_x86_64.whl",
		"ckptcheck-1.2.3-py3-none-manylinux_2_17_aarch64.musllinux_1_1_aarch64.whl",
		"ckptcheck-1.2.3-py3-none-macosx_12_0_x86_64.whl",
		"ckptcheck-1.2.3-py3-none-macosx_12_0_arm64.whl",
		"ckptcheck-1.2.3-py3-none-win_amd64.whl",
		"ckptcheck-1.2.3-py3-none-win_arm64.whl",
	} {
		if _, err := os.Stat(filepath.Join(out, name)); err != nil {
			t.Error(err)
		}
	}
	zr, err := zip.OpenReader(filepath.Join(out, "ckptcheck-1.2.3-py3-none-win_arm64.whl"))
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	var names []string
	for _, f := range zr.File {
		names = append(names, f.Name)
		if f.Name == "ckptcheck-1.2.3.dist-info/WHEEL" {
			rc, _ := f.Open()
			var b bytes.Buffer
			b.ReadFrom(rc)
			if b.String() != "Wheel-Version: 1.0\nGenerator: ckptcheck tools/wheel\nRoot-Is-Purelib: false\nTag: py3-none-win_arm64\n" {
				t.Errorf("WHEEL:\n%s", b.String())
			}
		}
	}
	if names[len(names)-1] != "ckptcheck-1.2.3.dist-info/RECORD" || !strings.Contains(strings.Join(names, " "), "ckptcheck-1.2.3.data/scripts/ckptcheck.exe") {
		t.Errorf("entries: %v", names)
	}
}

// TestVerifyCatches: a wheel whose RECORD is wrong, or whose binary is
// another platform's, fails verification.
func TestVerifyCatches(t *testing.T) {
	dist := tinyDist(t)
	pkg, _ := readPackage("../../python/ckptcheck")
	linux, darwin := platforms[0], platforms[3]
	bin, _ := os.ReadFile(filepath.Join(dist, darwin.binary()))
	out := t.TempDir()
	w, err := buildWheel(out, linux, "1.0.0", bin, pkg, meta{})
	if err != nil {
		t.Fatal(err)
	}
	if err := verifyWheel(w); err == nil || !strings.Contains(err.Error(), "not ELF") {
		t.Errorf("a Mach-O in a manylinux wheel: %v", err)
	}
	arm, _ := os.ReadFile(filepath.Join(dist, platforms[1].binary()))
	w, _ = buildWheel(out, linux, "1.0.0", arm, pkg, meta{})
	if err := verifyWheel(w); err == nil || !strings.Contains(err.Error(), "arm64") {
		t.Errorf("an arm64 ELF in an x86_64 wheel: %v", err)
	}
	// A file changed after RECORD was written.
	good, _ := os.ReadFile(filepath.Join(dist, linux.binary()))
	tampered := append(bytes.Clone(pkg[0].data), '#')
	w, _ = buildWheel(out, linux, "1.0.0", good, pkg, meta{})
	if err := verifyWheel(w); err != nil {
		t.Fatalf("the good wheel: %v", err)
	}
	rewritten := rewriteEntry(t, w, pkg[0].name, tampered)
	if err := verifyWheel(rewritten); err == nil || !strings.Contains(err.Error(), "RECORD says") {
		t.Errorf("a tampered file: %v", err)
	}
}

// rewriteEntry copies a wheel with one entry's content replaced.
func rewriteEntry(t *testing.T, path, name string, data []byte) string {
	t.Helper()
	zr, err := zip.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	dst := filepath.Join(t.TempDir(), filepath.Base(path))
	f, _ := os.Create(dst)
	defer f.Close()
	zw := zip.NewWriter(f)
	for _, e := range zr.File {
		w, _ := zw.CreateHeader(&e.FileHeader)
		if e.Name == name {
			w.Write(data)
			continue
		}
		rc, _ := e.Open()
		var b bytes.Buffer
		b.ReadFrom(rc)
		w.Write(b.Bytes())
	}
	zw.Close()
	return dst
}
