//go:build unix

package checkpoint_test

import (
	"context"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ckptcheck/ckptcheck/checkpoint"
)

// FIFOs exist on unix only (syscall.Mkfifo); internal/wholefile has the
// check for every platform.
func TestOpenRefusesNonRegularFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "model.safetensors")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	for _, p := range []string{fifo, dir} {
		done := make(chan error, 1)
		go func() { _, err := checkpoint.Open(context.Background(), p, checkpoint.Options{}); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "FIFO") || !strings.Contains(err.Error(), fifo) {
				t.Errorf("%s: err = %v", p, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: Open blocked on a FIFO", p)
		}
	}
}
