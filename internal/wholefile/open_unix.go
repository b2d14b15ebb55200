//go:build unix

package wholefile

import (
	"os"
	"syscall"
)

// openNoBlock opens path read-only with O_NONBLOCK: opening a FIFO then
// returns at once instead of waiting for a writer. Reads of a regular
// file, the only kind read, never block whatever the flag.
func openNoBlock(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}
