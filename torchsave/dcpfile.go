package torchsave

import (
	"fmt"
	"io"

	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// A DCPFile is the model tensors of a DCP step whose first chunk is in one
// item file, as a tensorfile.File over that file: a tensor saved in one
// chunk has the absolute byte range of its item's storage; a tensor in
// several chunks is listed with a DCPChunked error (its values are
// assembled from chunks, which is not done yet) and Offset -1.
type DCPFile struct {
	Tensors []Tensor
}

var _ tensorfile.File = (*DCPFile)(nil)

func (f *DCPFile) NumTensors() int                        { return len(f.Tensors) }
func (f *DCPFile) TensorInfo(i int) tensorfile.TensorInfo { return f.Tensors[i].TensorInfo }
func (f *DCPFile) TensorError(i int) error                { return f.Tensors[i].Err }
func (f *DCPFile) Meta() map[string]string                { return nil }
func (f *DCPFile) Close() error                           { return nil }

// DCPModelFiles groups the step's model tensors by the item file of their
// first chunk, in first-use order. open gives an item file's reader and
// size; each one-chunk tensor's item is read as a torch.save archive.
func DCPModelFiles(md *DCPMetadata, open func(rel string) (io.ReaderAt, int64, error)) (names []string, files map[string]*DCPFile, err error) {
	files = map[string]*DCPFile{}
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
		tensor, err := dcpTensor(t, open)
		if err != nil {
			return nil, nil, err
		}
		f.Tensors = append(f.Tensors, tensor)
	}
	return names, files, nil
}

func dcpTensor(t *DCPTensor, open func(string) (io.ReaderAt, int64, error)) (Tensor, error) {
	unread := Tensor{TensorInfo: tensorfile.TensorInfo{Name: t.FQN, DType: t.DType, Shape: t.Shape, Offset: -1}}
	if len(t.Chunks) != 1 || t.Tiling() != nil || t.Transform() != nil {
		unread.Err = formatErr(DCPChunked, DCPMetadataName, t.FQN, "saved in %d chunks: compared by name, shape and dtype, its values not read", len(t.Chunks))
		return unread, nil
	}
	it := t.Chunks[0].Item
	r, size, err := open(it.RelativePath)
	if err != nil {
		return Tensor{}, fmt.Errorf("%s: %w", it.RelativePath, err)
	}
	if it.Offset > uint64(size) || it.Length > uint64(size)-it.Offset {
		return Tensor{}, formatErr(DCPBadMetadata, it.RelativePath, t.FQN, "item [%d, +%d) reaches past the file's %d bytes", it.Offset, it.Length, size)
	}
	item, err := NewFile(io.NewSectionReader(r, int64(it.Offset), int64(it.Length)), int64(it.Length))
	if err != nil {
		return Tensor{}, err
	}
	if len(item.Tensors) != 1 || item.Tensors[0].Err != nil {
		unread.Err = formatErr(DCPBadMetadata, it.RelativePath, t.FQN, "the item is not one readable tensor")
		return unread, nil
	}
	got := item.Tensors[0]
	got.Name = t.FQN
	if got.Offset >= 0 {
		got.Offset += int64(it.Offset)
	}
	return got, nil
}
