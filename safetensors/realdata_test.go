package safetensors

import (
	"os"
	"path/filepath"
	"testing"
)

// realFiles lists the third-party files in ../shared/realdata (read in
// place, never copied), or skips when that folder is absent. The
// comparison of these files with an independent reader is in
// tools/crosscheck, whose module may depend on one.
func realFiles(t *testing.T) []string {
	t.Helper()
	root := filepath.Join("..", "..", "shared", "realdata")
	if _, err := os.Stat(root); err != nil {
		t.Skipf("real third-party files not found at %s (present in CI): %v", root, err)
	}
	var files []string
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && filepath.Ext(p) == ".safetensors" {
			files = append(files, p)
		}
		return err
	})
	if len(files) == 0 {
		t.Fatalf("no .safetensors files under %s", root)
	}
	return files
}

func TestRealFilesValid(t *testing.T) {
	for _, p := range realFiles(t) {
		f, err := Open(p)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		if len(f.Duplicates) > 0 || f.HeaderSize%8 != 0 {
			t.Errorf("%s: duplicates %v, header size %d", p, f.Duplicates, f.HeaderSize)
		}
		f.Close()
	}
}
