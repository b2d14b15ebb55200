//go:build !unix

package wholefile

import "os"

// openNoBlock opens path read-only. Windows has no O_NONBLOCK, and needs
// none: its named pipes (\\.\pipe\…) and devices (NUL, CON, COM1) are
// refused by the look before the open (os.Stat reports them as
// ModeNamedPipe and ModeCharDevice, from GetFileType), and a pipe's client
// open does not wait for a server; the opened file is checked again.
func openNoBlock(path string) (*os.File, error) {
	return os.Open(path)
}
