package wholefile

import (
	"errors"
	"io/fs"
	"strconv"
)

// ErrNotRegular is wrapped by the error for a path that is not a regular
// file; ErrTooLarge by the error for a file over its cap.
var (
	ErrNotRegular = errors.New("not a regular file")
	ErrTooLarge   = errors.New("file too large")
)

// An Error says why a file cannot be read whole: "--policy /x: file is
// larger than 1 MiB".
type Error struct {
	Kind, Path string
	// Err is ErrNotRegular, ErrTooLarge, or the system's error.
	Err error
	// Mode is the file's type, for ErrNotRegular.
	Mode fs.FileMode
	// Detail is the message after the path.
	Detail string
}

func (e *Error) Error() string {
	if e.Kind == "" {
		return e.Path + ": " + e.Detail
	}
	return e.Kind + " " + e.Path + ": " + e.Detail
}

func (e *Error) Unwrap() error { return e.Err }

// regular refuses anything but a regular file, saying what it is.
func (l Limit) regular(path string, fi fs.FileInfo) error {
	if fi.Mode().IsRegular() {
		return nil
	}
	return &Error{Kind: l.Kind, Path: path, Err: ErrNotRegular, Mode: fi.Mode().Type(), Detail: "is " + describe(fi.Mode()) + ", not a regular file"}
}

// fail wraps a system error, without repeating the path.
func (l Limit) fail(path string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return &Error{Kind: l.Kind, Path: path, Err: err, Detail: err.Error()}
}

// describe names a file's type.
func describe(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	}
	return "a special file"
}

// FormatSize writes a cap in the largest binary unit that divides it:
// "1 MiB", "4 KiB", "1500 bytes".
func FormatSize(n int64) string {
	for _, u := range []struct {
		size int64
		name string
	}{{1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}} {
		if n >= u.size && n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + " " + u.name
		}
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// thousands writes n with commas between groups of three digits.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
