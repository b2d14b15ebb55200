//go:build unix

package s3

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestSharedFileRefused: a FIFO or an oversized file named as the shared
// config is an error, never a hang or an allocation by its size.
func TestSharedFileRefused(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip(err)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, make([]byte, maxConfigFile+1), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{fifo, big} {
		env := map[string]string{"AWS_CONFIG_FILE": p, "AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "absent")}
		if _, err := loadAWSConfig(func(k string) string { return env[k] }); err == nil {
			t.Errorf("%s: no error", p)
		}
	}
}
