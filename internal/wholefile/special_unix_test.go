//go:build unix

package wholefile

import (
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Paths that are not regular files: each is refused at once, never read.
var specialCases = []readCase{
	{name: "fifo", setup: fifo, err: ErrNotRegular, msg: "is a named pipe (FIFO)"},
	{name: "symlink to a fifo", setup: func(t *testing.T) string {
		link := filepath.Join(t.TempDir(), "link")
		if err := os.Symlink(fifo(t), link); err != nil {
			t.Fatal(err)
		}
		return link
	}, err: ErrNotRegular, msg: "is a named pipe (FIFO)"},
	{name: "/dev/zero", setup: device("/dev/zero"), err: ErrNotRegular, msg: "is a character device"},
	{name: "/dev/null", setup: device("/dev/null"), err: ErrNotRegular, msg: "is a character device"},
	{name: "socket", setup: func(t *testing.T) string {
		// A short directory: socket paths are limited to about 100 bytes.
		dir, err := os.MkdirTemp("", "wf")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		p := filepath.Join(dir, "s")
		l, err := net.Listen("unix", p)
		if err != nil {
			t.Skip("no unix sockets:", err)
		}
		t.Cleanup(func() { l.Close() })
		return p
	}, err: ErrNotRegular, msg: "is a socket"},
}

// fifo makes a named pipe no one writes to: opening it for reading without
// O_NONBLOCK would wait forever.
func fifo(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Skip("no FIFOs:", err)
	}
	return p
}

func device(path string) func(t *testing.T) string {
	return func(t *testing.T) string {
		if _, err := os.Stat(path); err != nil {
			t.Skip(err)
		}
		return path
	}
}

// A FIFO put where a regular file was, after the look and before the open,
// is caught by the check of the opened file; the open itself must not
// block. Open is called on the FIFO's path directly, past the first look.
func TestOpenedFileChecked(t *testing.T) {
	p := fifo(t)
	f, err := openNoBlock(p)
	if err != nil {
		t.Fatalf("open of a FIFO: %v", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if err := testLimit.regular(p, fi); err == nil {
		t.Error("a FIFO passed the check of the opened file")
	}
}
