package torchsave

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"slices"

	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// FileSystemWriter's serialization_format=SAFETENSORS (torch 2.8 and
// later; torch/distributed/checkpoint/filesystem.py, _write_item and
// _write_files_from_queue) writes no archive a chunk: a rank's file holds
// its byte items, then one safetensors blob of its tensor chunks keyed by
// FQN, with DCP_SHARDING_INFO (each FQN's saved_offsets) in its metadata.
// Each chunk's _StorageInfo has the blob's start as offset and the
// chunk's byte size as length. The blob's header is read here, bounded,
// without the safetensors package (formats do not import each other):
// only the entry of the chunk's FQN is used, and the file's own reader
// judges nothing else of it.

// maxItemHeader bounds a safetensors item's header, as the safetensors
// reference bounds any header (100 MB).
const maxItemHeader = 100_000_000

// isSafetensorsItem reports whether an item's bytes start like a
// safetensors blob: an 8-byte little-endian header length, then '{'. A
// torch.save archive starts "PK\x03\x04", a length no file holds.
func isSafetensorsItem(r io.ReaderAt, size int64, it DCPItem) bool {
	var head [9]byte
	if it.Offset > uint64(size) || uint64(size)-it.Offset < uint64(len(head)) {
		return false
	}
	if _, err := r.ReadAt(head[:], int64(it.Offset)); err != nil && !errors.Is(err, io.EOF) {
		return false
	}
	n := binary.LittleEndian.Uint64(head[:8])
	return head[8] == '{' && n <= maxItemHeader && n <= uint64(size)-it.Offset-8
}

// A blobHeader is a safetensors blob's header: its length and entries.
type blobHeader struct {
	n       uint64
	entries map[string]json.RawMessage
	err     error
}

// blobHeaders are the headers read of a step's safetensors blobs, by file
// and offset: every chunk of a rank's file is in the same blob.
type blobHeaders map[blobAt]*blobHeader

type blobAt struct {
	file   string
	offset uint64
}

func (hs blobHeaders) read(r io.ReaderAt, it DCPItem) (*blobHeader, error) {
	key := blobAt{it.RelativePath, it.Offset}
	if h := hs[key]; h != nil {
		return h, nil
	}
	var head [8]byte
	if _, err := r.ReadAt(head[:], int64(it.Offset)); err != nil {
		return nil, err
	}
	h := &blobHeader{n: binary.LittleEndian.Uint64(head[:])} // isSafetensorsItem bounded it by the file
	b := make([]byte, h.n)
	if _, err := r.ReadAt(b, int64(it.Offset)+8); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	h.err = json.Unmarshal(b, &h.entries)
	hs[key] = h
	return h, nil
}

// tensor reads the chunk c of tensor fqn from the safetensors blob at its
// item's offset in a file of size bytes: the tensor at its range, which
// is relative to the item's offset as an archive item's is.
func (hs blobHeaders) tensor(r io.ReaderAt, size int64, fqn string, dtype tensorfile.DType, c DCPChunk) (Tensor, error) {
	it := c.Item
	h, err := hs.read(r, it)
	if err != nil {
		return Tensor{}, err
	}
	bad := func(format string, args ...any) (Tensor, error) {
		return Tensor{}, formatErr(DCPBadMetadata, it.RelativePath, fqn, "chunk %s's safetensors item: "+format, append([]any{region(c.Offsets, c.Sizes)}, args...)...)
	}
	if h.err != nil {
		return bad("its header is not JSON: %v", h.err)
	}
	n := h.n
	raw, ok := h.entries[fqn]
	if !ok {
		return bad("its header has no entry %q", fqn)
	}
	var e struct {
		DType       string   `json:"dtype"`
		Shape       []uint64 `json:"shape"`
		DataOffsets []uint64 `json:"data_offsets"`
	}
	if err := json.Unmarshal(raw, &e); err != nil || len(e.DataOffsets) != 2 {
		return bad("its entry is not a tensor's")
	}
	d, ok := tensorfile.ParseDType(e.DType)
	numel, fits := tensorfile.NumElements(e.Shape)
	begin, end := e.DataOffsets[0], e.DataOffsets[1]
	data := 8 + n // the blob's data, from the item's offset
	switch {
	case !ok || d != dtype || !slices.Equal(e.Shape, c.Sizes):
		return bad("%s %s, want %s %s", e.DType, tensorfile.FormatShape(e.Shape), dtype, tensorfile.FormatShape(c.Sizes))
	case !fits || begin > end || end-begin != d.Bytes(numel) || end-begin != it.Length:
		return bad("data_offsets [%d, %d) do not hold its %d bytes", begin, end, it.Length)
	case end > uint64(size)-it.Offset-data:
		return bad("data_offsets [%d, %d) reach past the file", begin, end)
	}
	return Tensor{TensorInfo: tensorfile.TensorInfo{Name: fqn, DType: d, Shape: e.Shape, Offset: int64(data + begin), Size: int64(end - begin)}}, nil
}
