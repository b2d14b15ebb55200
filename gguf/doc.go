// Package gguf reads GGUF files, the format of llama.cpp and ggml: a
// little-endian header (magic "GGUF", version, tensor and key/value
// counts), metadata key/value pairs of every GGUF value type (nested arrays
// included), tensor infos (name, dimensions in GGML order, GGML type,
// offset) and an aligned data section.
//
// The reader is strict in the way ggml's own is (ggml/src/gguf.cpp in
// ggml-org/llama.cpp, read at 327e2ca6f208b2c1f1726b6138d24fa687fbd466):
// version 3 (2 is read too), no duplicate keys or tensor names, at most four
// dimensions, rows that are whole blocks of the tensor's type, offsets that
// are the running sum of the tensors' sizes each padded to the alignment
// (general.alignment, a uint32 power of two, default 32), and every tensor's
// bytes inside the file. Every count and length is bounded by the bytes left
// in the file before anything is allocated for it, so a hostile header
// cannot make the reader allocate more than the file's own size. Errors are
// *FormatError with a stable Kind whose String is the finding code
// (gguf_truncated, gguf_bad_offset, …).
//
// The header has no length prefix, so it is read through the io.ReaderAt in
// bounded growing windows (1 MiB, then doubling, up to MaxHeaderSize): one
// read for most files, a few for the largest tokenizers, which keeps remote
// files to a few ranged requests.
//
// Shapes are reversed from GGML order (ne[0] is the row length) to the
// row-major order every other package uses: a GGML [4096, 11008] weight is
// [11008, 4096] here. Package gguf registers itself with tensorfile as
// format "gguf" (extension ".gguf", sniffed by its magic).
package gguf
