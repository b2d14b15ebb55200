package gguf

import "fmt"

// ErrorKind says what is wrong with a file. Its String form is the finding
// code users and pipelines match on.
type ErrorKind uint8

const (
	Truncated     ErrorKind = iota + 1 // the header ends before its counts say it does
	BadMagic                           // the file does not start with "GGUF"
	BadVersion                         // a version other than 2 or 3, or a big-endian file
	TooLarge                           // a count or length larger than the file could hold
	BadType                            // an unknown value type or GGML type
	BadOffset                          // an offset that is not the running padded sum
	TensorPastEnd                      // a tensor's bytes run past the end of the file
	BadSize                            // a shape that is not whole blocks, or too many dimensions
	Duplicate                          // a key or tensor name given twice
	BadAlignment                       // general.alignment not a uint32 power of two
	BadName                            // a tensor name ggml refuses (64 bytes or longer)
)

var kindNames = [...]string{
	Truncated:     "gguf_truncated",
	BadMagic:      "gguf_bad_magic",
	BadVersion:    "gguf_bad_version",
	TooLarge:      "gguf_too_large",
	BadType:       "gguf_bad_type",
	BadOffset:     "gguf_bad_offset",
	TensorPastEnd: "gguf_tensor_past_end",
	BadSize:       "gguf_bad_size",
	Duplicate:     "gguf_duplicate",
	BadAlignment:  "gguf_bad_alignment",
	BadName:       "gguf_bad_name",
}

// ErrorKinds lists every kind.
func ErrorKinds() []ErrorKind {
	out := make([]ErrorKind, 0, len(kindNames)-1)
	for k := Truncated; int(k) < len(kindNames); k++ {
		out = append(out, k)
	}
	return out
}

func (k ErrorKind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return fmt.Sprintf("ErrorKind(%d)", uint8(k))
}

// A FormatError reports a file that breaks the format: its kind, where
// (byte offset into the file, the key or tensor it is about) and a message.
type FormatError struct {
	Kind   ErrorKind
	Offset int64  // byte offset in the file, or -1 when it does not apply
	Key    string // metadata key the error is about, if any
	Tensor string // tensor the error is about, if any
	Msg    string
}

func (e *FormatError) Error() string {
	s := e.Kind.String()
	if e.Key != "" {
		s += fmt.Sprintf(": key %q", e.Key)
	}
	if e.Tensor != "" {
		s += fmt.Sprintf(": tensor %q", e.Tensor)
	}
	if e.Msg != "" {
		s += ": " + e.Msg
	}
	if e.Offset >= 0 {
		s += fmt.Sprintf(" (at byte %d)", e.Offset)
	}
	return s
}
