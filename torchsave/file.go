package torchsave

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/ckptcheck/ckptcheck/internal/pickle"
	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// MaxPickleSize bounds the pickles read from a file (data.pkl, or a legacy
// file's leading pickles): far above what the state dict of any model
// pickles to, and never more than the file holds.
const MaxPickleSize = 256 << 20

// A File is an open torch.save file: its tensors in the pickle's order.
type File struct {
	Tensors []Tensor
	// Legacy is set for a file in the format before torch 1.6.
	Legacy bool
	// Metadata holds the pickle's non-tensor leaves by their dotted names
	// (a checkpoint's "epoch": "3"), or nil.
	Metadata map[string]string
	// Version is the archive's version entry ("3"), "" for a legacy file.
	Version string
	closer  io.Closer
}

// A Tensor is one tensor of a File.
type Tensor struct {
	tensorfile.TensorInfo
	// Storage is the key of the storage it is a view of; tied weights
	// share one. StorageOffset and Stride are the view's, in elements.
	Storage       string
	StorageOffset uint64
	Stride        []uint64
	// Transposed says the tensor's range holds its transpose (its last
	// two dimensions swapped, as x.t() views x): the view's strides.
	Transposed bool
	// Pieces, when set, hold the elements of a strided view that is no
	// single range (a column slice, an expand), in row-major order; the
	// TensorInfo then has Offset -1 and Size the elements' bytes.
	Pieces []Piece
	// Err says why the tensor cannot be read (a *FormatError of kind
	// NonContiguous, UnsupportedTensor or StorageOutOfRange); its
	// TensorInfo then has Offset -1 and Size 0.
	Err error
}

// A *File is a tensorfile.File.
var _ tensorfile.File = (*File)(nil)

// NumTensors is len(f.Tensors).
func (f *File) NumTensors() int { return len(f.Tensors) }

// TensorInfo returns tensor i. A tensor that cannot be read has Offset -1
// and Size 0; TensorError says why.
func (f *File) TensorInfo(i int) tensorfile.TensorInfo { return f.Tensors[i].TensorInfo }

// TensorError says why tensor i cannot be read, or nil: callers that know
// the method (by type assertion) turn it into a finding.
func (f *File) TensorError(i int) error { return f.Tensors[i].Err }

// TensorPieces returns the pieces of tensor i (see Tensor.Pieces), nil
// for a tensor of one range.
func (f *File) TensorPieces(i int) []Piece { return f.Tensors[i].Pieces }

// TensorTransposed reports whether tensor i's range holds its transpose.
func (f *File) TensorTransposed(i int) bool { return f.Tensors[i].Transposed }

// Meta is f.Metadata.
func (f *File) Meta() map[string]string { return f.Metadata }

// Close closes the file Open opened; it does nothing for NewFile's.
func (f *File) Close() error {
	if f.closer != nil {
		return f.closer.Close()
	}
	return nil
}

// Open opens the named file with os.Open and reads it with NewFile.
func Open(name string) (*File, error) {
	fd, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	st, err := fd.Stat()
	if err != nil {
		fd.Close()
		return nil, err
	}
	f, err := NewFile(fd, st.Size())
	if err != nil {
		fd.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	f.closer = fd
	return f, nil
}

var zipMagic = []byte("PK\x03\x04")

// NewFile reads a torch.save file of size bytes from r: its pickles, the
// archive's directory and each storage's local header, not the storages.
func NewFile(r io.ReaderAt, size int64) (*File, error) {
	head := make([]byte, min(size, int64(len(legacyMagic))))
	if _, err := r.ReadAt(head, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	if bytes.Equal(head, legacyMagic) {
		return newLegacy(r, size)
	}
	return newArchive(r, size)
}

func newArchive(r io.ReaderAt, size int64) (*File, error) {
	zr, err := zip.NewReader(newZipSource(r, size), size)
	if err != nil {
		return nil, &FormatError{Kind: BadArchive, Msg: "not a zip archive: " + err.Error(), Err: err}
	}
	if len(zr.File) == 0 {
		return nil, formatErr(BadArchive, "", "", "an empty zip archive")
	}
	first := zr.File[0].Name
	i := strings.IndexByte(first, '/')
	if i <= 0 {
		return nil, formatErr(BadArchive, first, "", "the first entry is not in a record folder")
	}
	folder := first[:i+1]
	entries := map[string]*zip.File{}
	for _, e := range zr.File {
		if !strings.HasPrefix(e.Name, folder) {
			return nil, formatErr(BadArchive, e.Name, "", "an entry outside the record folder %s", folder)
		}
		entries[strings.TrimPrefix(e.Name, folder)] = e
	}
	f := &File{}
	if e, ok := entries["byteorder"]; ok {
		b, err := readEntry(e, 16)
		if err != nil {
			return nil, err
		}
		if s := strings.TrimSpace(string(b)); s != "little" {
			return nil, formatErr(BigEndian, e.Name, "", "byteorder %q: only little-endian archives are read", s)
		}
	}
	if e, ok := entries["version"]; ok {
		b, err := readEntry(e, 64)
		if err != nil {
			return nil, err
		}
		f.Version = strings.TrimSpace(string(b))
	}
	pkl, ok := entries["data.pkl"]
	if !ok {
		return nil, formatErr(BadArchive, folder+"data.pkl", "", "no data.pkl")
	}
	b, err := readEntry(pkl, min(MaxPickleSize, size))
	if err != nil {
		return nil, err
	}
	views, meta, _, err := unpickle(pkl.Name, b)
	if err != nil {
		return nil, err
	}
	f.Metadata = meta
	type placed struct {
		off, size int64
		err       error
	}
	offsets := dataOffsets(views, entries)
	storages := map[string]placed{}
	budget := maxFilePieces
	for _, v := range views {
		t := Tensor{Storage: v.key, StorageOffset: v.offset, Stride: v.stride}
		name := folder + "data/" + v.key
		p, ok := storages[v.key]
		if !ok && v.err == nil {
			e := entries["data/"+v.key]
			switch {
			case e == nil || v.key == "":
				p.err = formatErr(BadArchive, name, v.name, "the storage's entry is missing")
			case e.Method != zip.Store:
				p.err = formatErr(CompressedStorage, name, v.name, "the storage is compressed (method %d); torch.save stores storages uncompressed", e.Method)
			default:
				o := offsets[e]
				p.off, p.err = o.off, o.err
				p.size = int64(min(e.UncompressedSize64, uint64(max(size-p.off, 0))))
				if p.err != nil {
					p.err = &FormatError{Kind: BadArchive, Entry: name, Tensor: v.name, Msg: p.err.Error(), Err: p.err}
				}
			}
			storages[v.key] = p
		}
		if p.err != nil && v.err == nil {
			v.err = p.err
		}
		place(&t, v, p.off, p.size, name, &budget)
		f.Tensors = append(f.Tensors, t)
	}
	return f, nil
}

// headerReads bounds the local headers read at once: over a remote file
// each is a round trip, so reading them one after another would make
// opening a shard of hundreds of storages take seconds.
const headerReads = 16

type dataOffset struct {
	off int64
	err error
}

// dataOffsets reads the local header of each stored entry the views use,
// headerReads at a time, for where its data starts.
func dataOffsets(views []view, entries map[string]*zip.File) map[*zip.File]dataOffset {
	var todo []*zip.File
	seen := map[*zip.File]bool{}
	for _, v := range views {
		if e := entries["data/"+v.key]; v.err == nil && v.key != "" && e != nil && e.Method == zip.Store && !seen[e] {
			seen[e] = true
			todo = append(todo, e)
		}
	}
	got := make([]dataOffset, len(todo))
	var wg sync.WaitGroup
	sem := make(chan struct{}, headerReads)
	for i, e := range todo {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			got[i].off, got[i].err = e.DataOffset()
		})
	}
	wg.Wait()
	offsets := make(map[*zip.File]dataOffset, len(todo))
	for i, e := range todo {
		offsets[e] = got[i]
	}
	return offsets
}

// readEntry reads a small entry whole, at most limit bytes of it.
func readEntry(e *zip.File, limit int64) ([]byte, error) {
	if e.UncompressedSize64 > uint64(limit) {
		return nil, formatErr(BadArchive, e.Name, "", "%d bytes, more than the %d read", e.UncompressedSize64, limit)
	}
	rc, err := e.Open()
	if err != nil {
		return nil, &FormatError{Kind: BadArchive, Entry: e.Name, Msg: err.Error(), Err: err}
	}
	defer rc.Close()
	var b []byte
	if e.Method == zip.Store {
		// One read of the size the directory gives (at most limit, which
		// the caller bounds by the file's size): over a remote file, one
		// request rather than ReadAll's dozens of growing ones. The read
		// past the end checks the CRC.
		b = make([]byte, e.UncompressedSize64)
		if _, err = io.ReadFull(rc, b); err == nil {
			if _, err = rc.Read(make([]byte, 1)); err == io.EOF {
				err = nil
			}
		} else if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
	} else {
		b, err = io.ReadAll(io.LimitReader(rc, limit))
	}
	if err != nil {
		return nil, &FormatError{Kind: BadArchive, Entry: e.Name, Msg: err.Error(), Err: err}
	}
	return b, nil
}

// unpickle runs a tensor pickle and walks its result; n is how many bytes
// the pickle took.
func unpickle(entry string, b []byte) (views []view, meta map[string]string, n int, err error) {
	v, n, err := pickle.Load(b, Allowed, pickle.Limits{})
	if err != nil {
		return nil, nil, 0, pickleErr(entry, err)
	}
	w := &walker{entry: entry, meta: map[string]string{}, seen: map[any]bool{}, budget: pickle.Budget(len(b))}
	if err := w.walk("", v, 0); err != nil {
		return nil, nil, 0, err
	}
	if len(w.meta) == 0 {
		w.meta = nil
	}
	return w.views, w.meta, n, nil
}

func pickleErr(entry string, err error) error {
	var pe *pickle.Error
	if errors.As(err, &pe) && pe.Kind == pickle.Unsafe {
		return &FormatError{Kind: UnsafePickle, Entry: entry, Global: pe.Global, Msg: "refused " + pe.Global + ", which torch's weights_only unpickler does not allow; nothing was run", Err: err}
	}
	return &FormatError{Kind: BadPickle, Entry: entry, Msg: err.Error(), Err: err}
}
