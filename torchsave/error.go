package torchsave

import "fmt"

// ErrorKind says what is wrong with a torch file. Its String form is the
// stable finding code.
type ErrorKind uint8

const (
	// UnsafePickle: the pickle names a global torch's weights_only
	// unpickler would refuse, or an opcode that would run code.
	UnsafePickle ErrorKind = iota + 1
	// BadArchive: not a torch.save zip archive (no data.pkl, entries
	// outside the record folder, a broken zip directory).
	BadArchive
	// BadPickle: data.pkl is no pickle, or not the pickle of tensors
	// torch.save writes (a truncated pickle, a malformed persistent id).
	BadPickle
	// CompressedStorage: a storage entry is deflated, not stored.
	CompressedStorage
	// BigEndian: the archive's byteorder is big.
	BigEndian
	// StorageOutOfRange: a storage is larger than its entry, or a tensor
	// reaches past its storage.
	StorageOutOfRange
	// NonContiguous: a tensor is a strided view that is not read: it
	// would take more pieces than the bounds allow, or reads its storage
	// too many times over (see maxOverlap).
	NonContiguous
	// UnsupportedTensor: a tensor kind or storage dtype that is not read
	// (sparse, quantized, complex128).
	UnsupportedTensor
	// DCPBadMetadata: a DCP .metadata pickle is not the Metadata
	// torch.distributed.checkpoint writes (a chunk with no storage item,
	// a chunk outside its tensor, a relative_path that leaves the folder).
	DCPBadMetadata
	// DCPChunkGap: a DCP tensor's chunks leave part of it uncovered.
	DCPChunkGap
	// DCPChunkOverlap: two chunks of a DCP tensor cover the same elements.
	DCPChunkOverlap
	// DCPUnsupportedTransform: a DCP item records a transform (the newest
	// FileSystemWriter's transform_descriptors) that is not implemented.
	DCPUnsupportedTransform
	// DCPChunked: a DCP tensor whose chunks are not assembled (past the
	// bounds on pieces, not tiling it, transformed): compared by name,
	// shape and dtype only.
	DCPChunked
)

var kindNames = [...]string{
	UnsafePickle:      "unsafe_pickle",
	BadArchive:        "torch_bad_archive",
	BadPickle:         "torch_bad_pickle",
	CompressedStorage: "torch_compressed_storage",
	BigEndian:         "torch_big_endian",
	StorageOutOfRange: "torch_storage_out_of_range",
	NonContiguous:     "torch_noncontiguous",
	UnsupportedTensor: "torch_unsupported_tensor",

	DCPBadMetadata:          "dcp_bad_metadata",
	DCPChunkGap:             "dcp_chunk_gap",
	DCPChunkOverlap:         "dcp_chunk_overlap",
	DCPUnsupportedTransform: "dcp_unsupported_transform",
	DCPChunked:              "dcp_chunked",
}

// ErrorKinds lists every kind.
func ErrorKinds() []ErrorKind {
	out := make([]ErrorKind, 0, len(kindNames)-1)
	for k := UnsafePickle; int(k) < len(kindNames); k++ {
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

// A FormatError reports a torch file that cannot be read safely or
// correctly: what kind, which archive entry and tensor, and a message.
// For UnsafePickle, Global names what was refused ("posix.system").
type FormatError struct {
	Kind   ErrorKind
	Entry  string // archive entry ("archive/data.pkl"), if any
	Tensor string // tensor the error is about, if any
	Global string
	Msg    string
	Err    error // the underlying error (a *pickle.Error, a zip error), if any
}

func (e *FormatError) Error() string {
	s := e.Kind.String()
	if e.Entry != "" {
		s += ": " + e.Entry
	}
	if e.Tensor != "" {
		s += fmt.Sprintf(": tensor %q", e.Tensor)
	}
	if e.Msg != "" {
		s += ": " + e.Msg
	}
	return s
}

func (e *FormatError) Unwrap() error { return e.Err }

func formatErr(kind ErrorKind, entry, tensor, format string, args ...any) *FormatError {
	return &FormatError{Kind: kind, Entry: entry, Tensor: tensor, Msg: fmt.Sprintf(format, args...)}
}
