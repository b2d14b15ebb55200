package manifest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/safetensors"
	"github.com/ckptcheck/ckptcheck/verify"
)

func TestCheckHashes(t *testing.T) {
	src := writeModel(t, fixture.Tiny.Tensors(safetensors.BF16), 3, map[string]string{"tokenizer.json": `{"model": {}}`, "README.md": "# tiny"})
	cache := t.TempDir()
	snap, err := fixture.WriteHubSnapshot(cache, "org/tiny", "c0ffee", src)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	check := func() []verify.Finding {
		t.Helper()
		c := openCheckpoint(t, snap)
		files, err := HashWork(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		if len(files) != 7 { // 3 shards, index, config, tokenizer, README: every blob
			t.Fatalf("%d files to check", len(files))
		}
		fs, err := CheckHashes(ctx, c, files, HashOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return fs
	}
	if fs := check(); len(fs) != 0 {
		t.Fatalf("a good snapshot: %v", fs)
	}
	// A download that reported success with corrupt bytes: flip a byte of
	// an LFS blob (SHA-256) and of a small file's blob (git blob SHA-1).
	for _, name := range []string{"model-00002-of-00003.safetensors", "config.json"} {
		target, err := os.Readlink(filepath.Join(snap, name))
		if err != nil {
			t.Fatal(err)
		}
		blob := filepath.Join(snap, target)
		b, _ := os.ReadFile(blob)
		b[len(b)-1] ^= 1
		os.WriteFile(blob, b, 0o644)
	}
	fs := check()
	if len(fs) != 2 {
		t.Fatalf("findings %v", fs)
	}
	for _, f := range fs {
		if f.Code != verify.CodeHashMismatch || f.Severity != verify.Error || !strings.Contains(f.Message, "corrupt download") {
			t.Errorf("%v", f)
		}
	}
	if !strings.Contains(fs[0].File, "config.json") || !strings.Contains(fs[0].Message, "git blob SHA-1") ||
		!strings.Contains(fs[1].Message, "SHA-256") {
		t.Errorf("%v", fs)
	}
	// A plain folder has nothing to check against.
	if files, err := HashWork(ctx, openCheckpoint(t, src)); err != nil || len(files) != 0 {
		t.Errorf("plain folder: %v, %v", files, err)
	}
}
