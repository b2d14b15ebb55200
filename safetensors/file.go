package safetensors

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"io"
	"math/bits"
	"os"
	"slices"

	"github.com/ckptcheck/ckptcheck/internal/textfmt"
	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// MaxHeaderSize is the largest header the reference implementation accepts.
const MaxHeaderSize = 100_000_000

// TensorInfo is a tensor's header entry.
type TensorInfo struct {
	Name        string
	DType       DType
	Shape       []uint64
	DataOffsets [2]uint64 // [begin, end) relative to the start of the data section
}

// NumElements is the product of the shape (1 for a scalar). ok is false when
// the product overflows 64 bits.
func (t TensorInfo) NumElements() (n uint64, ok bool) { return tensorfile.NumElements(t.Shape) }

// Size is the length of the tensor's data in bytes, from its offsets (0
// when they are reversed).
func (t TensorInfo) Size() uint64 {
	if t.DataOffsets[1] < t.DataOffsets[0] {
		return 0
	}
	return t.DataOffsets[1] - t.DataOffsets[0]
}

// A Tensor is a tensor of an open File: its header entry, and its bytes
// through Open.
type Tensor struct {
	TensorInfo
	f *File
}

// Open returns a reader over the tensor's bytes. It never reaches outside
// the file's data section: in a file whose offsets run past its end, the
// reader ends where the file does.
func (t *Tensor) Open() *io.SectionReader {
	off, n := t.f.clamp(t.DataOffsets[0], t.Size())
	return io.NewSectionReader(t.f.r, off, n)
}

// A File is an open safetensors file: its parsed header and access to the
// tensors' bytes. Only the header is read when the file is opened.
type File struct {
	// HeaderSize is the length N of the JSON header, from the first 8 bytes.
	HeaderSize uint64
	// Size is the length of the whole file.
	Size int64
	// Metadata is the header's "__metadata__" object (nil when absent or null).
	Metadata map[string]string
	// Tensors lists the header's tensors in header order.
	Tensors []*Tensor
	// Duplicates lists tensor names that the header gives more than once;
	// like the reference, Tensors keeps the last entry of each.
	Duplicates []string

	r         io.ReaderAt
	closer    io.Closer
	index     nameIndex
	layoutErr *FormatError // from ReadHeader; nil in every File NewFile returns
}

// DataOffset is the file offset where the data section starts.
func (f *File) DataOffset() int64 { return 8 + int64(f.HeaderSize) }

// DataSection returns a reader over the data section: the bytes after the
// header, to the end of the file. Tensor offsets are relative to it.
func (f *File) DataSection() *io.SectionReader {
	return io.NewSectionReader(f.r, f.DataOffset(), f.Size-f.DataOffset())
}

// clamp turns a range of the data section into a range of the file that
// lies within the data section.
func (f *File) clamp(begin, n uint64) (off, length int64) {
	data := uint64(f.Size - f.DataOffset())
	begin = min(begin, data)
	n = min(n, data-begin)
	return f.DataOffset() + int64(begin), int64(n)
}

// Tensor returns the tensor with the given name, or nil.
func (f *File) Tensor(name string) *Tensor {
	i, ok := f.index.lookup(f.Tensors, name)
	if !ok {
		return nil
	}
	return f.Tensors[i]
}

// Close closes the file if it was opened with Open.
func (f *File) Close() error {
	if f.closer != nil {
		return f.closer.Close()
	}
	return nil
}

// Open opens the named file read-only and reads its header. Only regular
// files (or symlinks to them, as in the hub cache) are opened: a FIFO or a
// device would block or never end.
func Open(name string) (*File, error) {
	if st, err := os.Stat(name); err != nil {
		return nil, err
	} else if !st.Mode().IsRegular() {
		return nil, &os.PathError{Op: "open", Path: name, Err: errors.New("not a regular file")}
	}
	fh, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	st, err := fh.Stat()
	if err != nil {
		fh.Close()
		return nil, err
	}
	f, err := NewFile(fh, st.Size())
	if err != nil {
		fh.Close()
		return nil, err
	}
	f.closer = fh
	return f, nil
}

// lfsPointer starts every Git LFS pointer file; a checkout without `git lfs
// pull` leaves these in place of the weights.
var lfsPointer = []byte("version https://git-lfs.github.com/spec/")

// NewFile reads the header of the safetensors data in r, which is size bytes
// long, and validates it exactly as the reference implementation does.
//
// A malformed file returns a nil *File and a *FormatError whose Kind is the
// reference's error kind; an I/O error reading the header is returned as
// it is. To look at the tensors of a file whose header parsed but whose
// layout is wrong, use ReadHeader.
func NewFile(r io.ReaderAt, size int64) (*File, error) {
	f, err := ReadHeader(r, size)
	if err != nil {
		return nil, err
	}
	if f.layoutErr != nil {
		return nil, f.layoutErr
	}
	return f, nil
}

// ReadHeader reads and parses the header of the safetensors data in r,
// which is size bytes long, as NewFile does, but does not refuse a file for
// its layout (offsets that do not tile the data section, sizes that do not
// match shapes, a file too short or too long): CheckLayout reports that
// error, and Trailing says whether the only fault is bytes after the last
// tensor. Errors in the header itself return a nil *File and a
// *FormatError, as from NewFile.
//
// A file with a wrong layout is safe to read: a tensor's reader never
// reaches outside the data section. Only when CheckLayout is nil, or
// Trailing is positive, are the bytes a reader returns the tensor's whole.
func ReadHeader(r io.ReaderAt, size int64) (*File, error) {
	if size < 8 {
		return nil, formatErr(HeaderTooSmall, -1, "", "file is %s bytes, shorter than the 8-byte header length", n0(size))
	}
	var prefix [8]byte
	if err := readFull(r, prefix[:], 0); err != nil {
		return nil, err
	}
	n := binary.LittleEndian.Uint64(prefix[:])
	if n > MaxHeaderSize {
		if isLFSPointer(r, size) {
			return nil, formatErr(HeaderTooLarge, 0, "", "file is a Git LFS pointer, not the weights (run `git lfs pull`)")
		}
		return nil, formatErr(HeaderTooLarge, 0, "", "header length %s exceeds the limit of %s", n0(n), n0(MaxHeaderSize))
	}
	if n > uint64(size)-8 {
		return nil, formatErr(InvalidHeaderLength, 0, "", "header length %s runs past the end of the %s-byte file", n0(n), n0(size))
	}
	buf, free := headerBuffer(int(n)) // n <= min(MaxHeaderSize, size-8)
	if err := readFull(r, buf, 8); err != nil {
		free()
		return nil, err
	}
	h, err := parseHeader(buf, 8)
	free()
	if err != nil {
		return nil, err
	}
	f := &File{
		HeaderSize: n,
		Size:       size,
		Metadata:   h.metadata,
		Tensors:    h.tensors,
		Duplicates: h.duplicates,
		r:          r,
		index:      h.byName,
	}
	for _, t := range h.tensors {
		t.f = f
	}
	f.layoutErr = f.validateLayout()
	return f, nil
}

// CheckLayout returns the error NewFile gives a file whose header parsed
// but whose tensors do not tile its data section exactly (a
// *FormatError), or nil. It is always nil for a File from NewFile or Open.
func (f *File) CheckLayout() error {
	if f.layoutErr == nil {
		return nil // an untyped nil, never a nil *FormatError
	}
	return f.layoutErr
}

// Trailing is how many bytes follow the last tensor's data when that is
// the layout's only fault: every tensor's bytes are then inside the file
// and readable, though the reference refuses the file
// (metadata_incomplete_buffer). It is 0 for every other file.
func (f *File) Trailing() int64 {
	if f.layoutErr == nil || f.layoutErr.Kind != MetadataIncompleteBuffer {
		return 0
	}
	var end uint64
	for _, t := range f.Tensors {
		end = max(end, t.DataOffsets[1])
	}
	if data := uint64(f.Size - f.DataOffset()); end < data {
		return int64(data - end)
	}
	return 0
}

// readFull reads len(buf) bytes at off; io.ReaderAt may report io.EOF
// along with a full read at the end of the input.
func readFull(r io.ReaderAt, buf []byte, off int64) error {
	if len(buf) == 0 {
		return nil
	}
	n, err := r.ReadAt(buf, off)
	if n == len(buf) {
		return nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return err
}

func isLFSPointer(r io.ReaderAt, size int64) bool {
	buf := make([]byte, len(lfsPointer))
	if size < int64(len(buf)) {
		return false
	}
	return readFull(r, buf, 0) == nil && bytes.Equal(buf, lfsPointer)
}

// n0 writes a byte count or offset with thousands separators.
func n0[T ~int | ~int64 | ~uint64](v T) string { return textfmt.Thousands(v) }

// validateLayout is the reference's Metadata::validate plus its final length
// check: sorted by offsets, the tensors must tile the data section exactly.
func (f *File) validateLayout() *FormatError {
	byOffsets := func(a, b *Tensor) int {
		oa, ob := a.DataOffsets, b.DataOffsets
		return cmp.Or(cmp.Compare(oa[0], ob[0]), cmp.Compare(oa[1], ob[1]))
	}
	// Writers usually store tensors in header order: then there is nothing
	// to sort, and no copy of the list to make.
	order := f.Tensors
	if !slices.IsSortedFunc(order, byOffsets) {
		order = slices.Clone(order)
		slices.SortStableFunc(order, byOffsets)
	}
	dataStart := f.DataOffset()
	var cursor uint64
	for _, t := range order {
		begin, end := t.DataOffsets[0], t.DataOffsets[1]
		if begin != cursor || end < begin {
			return formatErr(InvalidOffset, dataStart+int64(min(begin, uint64(f.Size))), t.Name,
				"data_offsets [%s, %s] do not start where the previous tensor ends (%s)", n0(begin), n0(end), n0(cursor))
		}
		cursor = end
		n, ok := t.NumElements()
		var hi, nbits uint64
		if ok {
			hi, nbits = bits.Mul64(n, uint64(t.DType.Bits()))
		}
		if !ok || hi != 0 {
			return formatErr(ValidationOverflow, -1, t.Name, "shape %s of %s overflows", FormatShape(t.Shape), t.DType)
		}
		if nbits%8 != 0 {
			return formatErr(MisalignedSlice, -1, t.Name, "%s elements of %d-bit %s do not fill whole bytes", n0(n), t.DType.Bits(), t.DType)
		}
		if end-begin != nbits/8 {
			return formatErr(TensorInvalidInfo, -1, t.Name, "shape %s of %s needs %s bytes, data_offsets span %s", FormatShape(t.Shape), t.DType, n0(nbits/8), n0(end-begin))
		}
	}
	if data := uint64(f.Size) - uint64(dataStart); cursor != data {
		if cursor < data {
			return formatErr(MetadataIncompleteBuffer, -1, "",
				"tensors end at data byte %s but the file has %s data bytes (%s trailing)", n0(cursor), n0(data), textfmt.Plural(data-cursor, "byte"))
		}
		return formatErr(MetadataIncompleteBuffer, -1, "",
			"tensors end at data byte %s but the file has %s data bytes (truncated)", n0(cursor), n0(data))
	}
	return nil
}
