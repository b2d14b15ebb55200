package safetensors

import "fmt"

// ErrorKind says what is wrong with a file or checkpoint. The first ten are
// the reference implementation's error kinds, checked in its order; their
// String forms are the finding codes users and pipelines match on.
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

	// Checkpoint-level kinds: an index.json and the shards it names.
	IndexInvalid
	IndexUnsafePath
	IndexMissingShard
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
	IndexInvalid:                 "index_invalid",
	IndexUnsafePath:              "index_unsafe_path",
	IndexMissingShard:            "index_missing_shard",
}

func (k ErrorKind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return fmt.Sprintf("ErrorKind(%d)", uint8(k))
}

// A FormatError reports a file or index that breaks the format: what kind of
// error, where (byte offset into the file, tensor name) and a short message.
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
