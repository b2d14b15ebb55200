package safetensors

import "fmt"

// ErrorKind says what is wrong with a file: the reference implementation's
// error kinds, checked in its order. Their String forms are the finding
// codes users and pipelines match on.
type ErrorKind uint8

const (
	HeaderTooSmall ErrorKind = iota + 1
	HeaderTooLarge
	InvalidHeaderLength
	InvalidHeader // header not UTF-8
	InvalidHeaderDeserialization
	InvalidOffset
	ValidationOverflow
	MisalignedSlice
	TensorInvalidInfo
	MetadataIncompleteBuffer
)

var kindNames = [...]string{
	HeaderTooSmall:               "header_too_small",
	HeaderTooLarge:               "header_too_large",
	InvalidHeaderLength:          "invalid_header_length",
	InvalidHeader:                "invalid_header",
	InvalidHeaderDeserialization: "invalid_header_deserialization",
	InvalidOffset:                "invalid_offset",
	ValidationOverflow:           "validation_overflow",
	MisalignedSlice:              "misaligned_slice",
	TensorInvalidInfo:            "tensor_invalid_info",
	MetadataIncompleteBuffer:     "metadata_incomplete_buffer",
}

// ErrorKinds lists every kind in the reference's order.
func ErrorKinds() []ErrorKind {
	out := make([]ErrorKind, 0, len(kindNames)-1)
	for k := HeaderTooSmall; int(k) < len(kindNames); k++ {
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

// A FormatError reports a file that breaks the format: what kind of error,
// where (byte offset into the file, tensor name) and a short message.
type FormatError struct {
	Kind   ErrorKind
	Offset int64  // byte offset in the file, or -1 when it does not apply
	Tensor string // tensor the error is about, if any
	Msg    string
}

func (e *FormatError) Error() string {
	s := e.Kind.String()
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

func formatErr(kind ErrorKind, off int64, tensor, format string, args ...any) *FormatError {
	return &FormatError{Kind: kind, Offset: off, Tensor: tensor, Msg: fmt.Sprintf(format, args...)}
}
