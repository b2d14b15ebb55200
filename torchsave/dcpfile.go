package torchsave

import (
	"errors"
	"fmt"
	"io"

	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// A DCPFile is the model tensors of a DCP step whose first chunk is in one
// item file, as a tensorfile.File over that file: a tensor saved in one
// contiguous chunk has the absolute byte range of its item's storage; a
// tensor in several chunks (or a strided one) has Offset -1 and the
// Pieces its chunks' items make, in the step's item files; a tensor
// whose chunks cannot be assembled has a DCPChunked error saying why.
type DCPFile struct {
	Tensors []Tensor
}

var _ tensorfile.File = (*DCPFile)(nil)

func (f *DCPFile) NumTensors() int                        { return len(f.Tensors) }
func (f *DCPFile) TensorInfo(i int) tensorfile.TensorInfo { return f.Tensors[i].TensorInfo }
func (f *DCPFile) TensorError(i int) error                { return f.Tensors[i].Err }
func (f *DCPFile) TensorPieces(i int) []Piece             { return f.Tensors[i].Pieces }
func (f *DCPFile) TensorTransposed(i int) bool            { return f.Tensors[i].Transposed }
func (f *DCPFile) Meta() map[string]string                { return nil }
func (f *DCPFile) Close() error                           { return nil }

// DCPModelFiles groups the step's model tensors by the item file of their
// first chunk, in first-use order, with the files that hold only later
// chunks as files of no tensor. open gives an item file's reader and
// size; each chunk's item is read with DCPItems.
func DCPModelFiles(md *DCPMetadata, open func(rel string) (io.ReaderAt, int64, error)) (names []string, files map[string]*DCPFile, err error) {
	files = map[string]*DCPFile{}
	budget := maxFilePieces
	read := NewDCPItems()
	for i := range md.Tensors {
		t := &md.Tensors[i]
		if t.Part != DCPModel || len(t.Chunks) == 0 {
			continue
		}
		rel := t.Chunks[0].Item.RelativePath
		f := files[rel]
		if f == nil {
			f = &DCPFile{}
			files[rel] = f
			names = append(names, rel)
		}
		tensor, err := dcpTensor(t, open, read, &budget)
		if err != nil {
			return nil, nil, err
		}
		f.Tensors = append(f.Tensors, tensor)
		// A rank's file may hold no tensor's first chunk: it is listed
		// too, so that every piece's file is one of the step's.
		for _, p := range tensor.Pieces {
			if files[p.File] == nil {
				files[p.File] = &DCPFile{}
				names = append(names, p.File)
			}
		}
	}
	return names, files, nil
}

// dcpTensor reads a tensor's chunks' items (see DCPItems). A single chunk read as
// one range (or a transpose of one) keeps it, within the first chunk's
// file; otherwise the chunks are assembled into pieces (see assemble).
func dcpTensor(t *DCPTensor, open func(string) (io.ReaderAt, int64, error), read *DCPItems, budget *int) (Tensor, error) {
	unread := Tensor{TensorInfo: tensorfile.TensorInfo{Name: t.FQN, DType: t.DType, Shape: t.Shape, Offset: -1}}
	if err := t.Tiling(); err != nil {
		unread.Err = formatErr(DCPChunked, DCPMetadataName, t.FQN, "its %d chunks do not tile it; its values are not read", len(t.Chunks))
		return unread, nil
	}
	if err := t.Transform(); err != nil {
		unread.Err = formatErr(DCPChunked, DCPMetadataName, t.FQN, "its chunks are stored with a transform; its values are not read")
		return unread, nil
	}
	items := make([]Tensor, len(t.Chunks))
	for k, c := range t.Chunks {
		r, size, err := open(c.Item.RelativePath)
		if err != nil {
			return Tensor{}, fmt.Errorf("%s: %w", c.Item.RelativePath, err)
		}
		if it := c.Item; it.Offset > uint64(size) || it.Length > uint64(size)-it.Offset {
			return Tensor{}, formatErr(DCPBadMetadata, it.RelativePath, t.FQN, "item [%d, +%d) reaches past the file's %d bytes", it.Offset, it.Length, size)
		}
		item, err := read.Chunk(r, size, t, c)
		var fe *FormatError
		switch {
		case errors.As(err, &fe) && fe.Kind == DCPBadMetadata && fe.Tensor == t.FQN:
			unread.Err = err
			return unread, nil
		case err != nil:
			return Tensor{}, err
		}
		items[k] = item
	}
	if len(items) == 1 && items[0].Pieces == nil {
		got := items[0]
		got.Name = t.FQN
		got.Offset += int64(t.Chunks[0].Item.Offset)
		return got, nil
	}
	pieces, why := assemble(t, items, budget)
	if why != "" {
		unread.Err = formatErr(DCPChunked, DCPMetadataName, t.FQN, "saved in %d chunks: %s; compared by name, shape and dtype, its values not read", len(t.Chunks), why)
		return unread, nil
	}
	n, _ := t.NumElements()
	unread.Pieces, unread.Size = pieces, int64(t.DType.Bytes(n))
	return unread, nil
}
