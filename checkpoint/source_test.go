package checkpoint

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLocalReadTruncated: a read of a local file cut short by the file
// being truncated during the run names the file and the offset, and is
// ErrChanged.
func TestLocalReadTruncated(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "a.safetensors")
	os.WriteFile(name, make([]byte, 1<<16), 0o644)
	f, err := Dir(dir).Open(context.Background(), "a.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	os.Truncate(name, 1000)
	_, err = f.ReadAt(make([]byte, 8192), 512)
	if !errors.Is(err, ErrChanged) || !strings.Contains(err.Error(), name+": reading 8192 bytes at byte 512") {
		t.Errorf("%v", err)
	}
	// The end of the file as opened is io.EOF, as ever.
	if n, err := f.ReadAt(make([]byte, 10), 1<<16); n != 0 || err == nil || errors.Is(err, ErrChanged) {
		t.Errorf("at the end: %d, %v", n, err)
	}
}
