package docscheck

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
)

// TestPythonExamples keeps docs/python.md's examples true: each compiles
// (python3 -m py_compile; transformers and torchtitan, which they import,
// are not needed for that), and each ckptcheck.NAME they use is in the
// package's __all__.
func TestPythonExamples(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3: the examples are not compiled")
	}
	examples := blocks(t, "../../docs/python.md", "python")
	if len(examples) < 3 {
		t.Fatalf("docs/python.md has %d python blocks, want the API, the callback and the launcher", len(examples))
	}
	init, err := os.ReadFile("../../python/ckptcheck/__init__.py")
	if err != nil {
		t.Fatal(err)
	}
	all := map[string]bool{}
	m := regexp.MustCompile(`__all__ = \[([^\]]*)\]`).FindSubmatch(init)
	if m == nil {
		t.Fatal("python/ckptcheck/__init__.py has no __all__")
	}
	for _, q := range regexp.MustCompile(`"\w+"`).FindAll(m[1], -1) {
		name, _ := strconv.Unquote(string(q))
		all[name] = true
	}
	dir := t.TempDir()
	use := regexp.MustCompile(`\bckptcheck\.(\w+)`)
	for i, src := range examples {
		file := filepath.Join(dir, "example"+strconv.Itoa(i)+".py")
		os.WriteFile(file, []byte(src), 0o644)
		cmd := exec.Command(py, "-m", "py_compile", file)
		cmd.Env = append(os.Environ(), "PYTHONPYCACHEPREFIX="+filepath.Join(dir, "cache"))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("docs/python.md block %d does not compile: %v\n%s", i+1, err, out)
		}
		for _, u := range use.FindAllStringSubmatch(src, -1) {
			if !all[u[1]] {
				t.Errorf("docs/python.md block %d uses ckptcheck.%s, which the package does not export", i+1, u[1])
			}
		}
	}
}
