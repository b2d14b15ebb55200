package torchsave

import (
	"fmt"
	"io"
	"slices"

	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// DCPItems reads the items of a step's tensor chunks, as either of
// FileSystemWriter's serializations writes them: a torch.save archive an
// item (the default, and all torchtitan has written so far), or an entry
// of a rank file's safetensors blob (serialization_format=SAFETENSORS;
// see blobHeaders). The blobs' headers are read once. Not safe for
// concurrent use.
type DCPItems struct{ headers blobHeaders }

// NewDCPItems returns a reader of a step's items.
func NewDCPItems() *DCPItems { return &DCPItems{headers: blobHeaders{}} }

// Chunk reads chunk c of tensor t from its item file r of size bytes: the
// chunk's tensor, its Offset relative to the item's offset. An item that
// is not one tensor of the chunk's dtype and shape is a DCPBadMetadata
// error; an archive that does not read is its own FormatError.
func (d *DCPItems) Chunk(r io.ReaderAt, size int64, t *DCPTensor, c DCPChunk) (Tensor, error) {
	it := c.Item
	if it.Offset > uint64(size) || it.Length > uint64(size)-it.Offset {
		return Tensor{}, formatErr(DCPBadMetadata, it.RelativePath, t.FQN, "item [%d, +%d) reaches past the file's %d bytes", it.Offset, it.Length, size)
	}
	if isSafetensorsItem(r, size, it) {
		return d.headers.tensor(r, size, t.FQN, t.DType, c)
	}
	item, err := NewFile(io.NewSectionReader(r, int64(it.Offset), int64(it.Length)), int64(it.Length))
	if err != nil {
		return Tensor{}, err
	}
	if len(item.Tensors) != 1 || item.Tensors[0].Err != nil || item.Tensors[0].DType != t.DType || !slices.Equal(item.Tensors[0].Shape, c.Sizes) {
		got := "no tensor"
		if len(item.Tensors) > 0 {
			got = fmt.Sprintf("%d tensors, the first %s %s", len(item.Tensors), item.Tensors[0].DType, tensorfile.FormatShape(item.Tensors[0].Shape))
		}
		return Tensor{}, formatErr(DCPBadMetadata, it.RelativePath, t.FQN, "chunk %s's item holds %s; the metadata says one %s %s", region(c.Offsets, c.Sizes), got, t.DType, tensorfile.FormatShape(c.Sizes))
	}
	return item.Tensors[0], nil
}
