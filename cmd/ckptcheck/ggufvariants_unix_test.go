//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A variant that cannot be read (a FIFO named like a GGUF file, a file
// without read permission) stops validate and inspect of the folder with
// an error naming it (exit 2), without waiting for a writer.
func TestGGUFVariantUnreadable(t *testing.T) {
	for _, tt := range []struct {
		name string
		make func(t *testing.T, path string) error
		want string
	}{
		{"fifo", func(_ *testing.T, p string) error { return syscall.Mkfifo(p, 0o644) }, "a FIFO, not a regular file"},
		{"unreadable", func(t *testing.T, p string) error {
			if os.Geteuid() == 0 {
				t.Skip("root reads files without read permission")
			}
			return os.WriteFile(p, []byte("GGUF"), 0)
		}, "permission denied"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeGGUFVariants(t)
			bad := filepath.Join(dir, "tiny-Q4_K_M.gguf")
			if err := tt.make(t, bad); err != nil {
				t.Skip(err)
			}
			for _, command := range []string{"validate", "inspect"} {
				type result struct {
					code   int
					stderr string
				}
				done := make(chan result, 1)
				go func() {
					code, _, stderr := ckptcheck(t, command, dir)
					done <- result{code, stderr}
				}()
				select {
				case r := <-done:
					if r.code != 2 || !strings.Contains(r.stderr, bad) || !strings.Contains(r.stderr, tt.want) {
						t.Errorf("%s: exit %d, want 2 with %q on %s\n%s", command, r.code, tt.want, bad, r.stderr)
					}
				case <-time.After(20 * time.Second):
					t.Fatalf("%s blocked on %s", command, bad)
				}
			}
		})
	}
}
