package safetensors

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
)

// A Tensor is a tensor to write: its name, dtype, shape and little-endian,
// row-major bytes.
type Tensor struct {
	Name  string
	DType DType
	Shape []uint64
	Data  []byte
}

// Write writes tensors and metadata to w in the official writer's layout.
// See EncodeHeader for the layout.
func Write(w io.Writer, tensors []Tensor, metadata map[string]string) error {
	infos := make([]TensorInfo, len(tensors))
	byName := make(map[string][]byte, len(tensors))
	for i, t := range tensors {
		infos[i] = TensorInfo{Name: t.Name, DType: t.DType, Shape: t.Shape}
		byName[t.Name] = t.Data
	}
	hdr, ordered, err := EncodeHeader(infos, metadata)
	if err != nil {
		return err
	}
	for _, t := range ordered {
		if uint64(len(byName[t.Name])) != t.Size() {
			return fmt.Errorf("safetensors: tensor %q: shape %v of %s needs %d bytes, got %d", t.Name, t.Shape, t.DType, t.Size(), len(byName[t.Name]))
		}
	}
	if _, err := w.Write(hdr); err != nil {
		return err
	}
	for _, t := range ordered {
		if _, err := w.Write(byName[t.Name]); err != nil {
			return err
		}
	}
	return nil
}

// EncodeHeader lays out tensors as the official writer does and returns the
// 8-byte length and JSON header, and the tensors with their DataOffsets in
// file order. The DataOffsets of the input are ignored. Tensors are ordered
// by dtype, larger first, then by name, so every tensor is aligned to its
// element size; the header is padded with spaces to a multiple of 8 bytes.
// Callers that stream large data write the header, then each tensor's bytes
// in the returned order.
func EncodeHeader(tensors []TensorInfo, metadata map[string]string) ([]byte, []TensorInfo, error) {
	ordered := slices.Clone(tensors)
	slices.SortStableFunc(ordered, func(a, b TensorInfo) int {
		return cmp.Or(cmp.Compare(b.DType, a.DType), cmp.Compare(a.Name, b.Name))
	})
	var buf bytes.Buffer
	buf.Write(make([]byte, 8))
	buf.WriteByte('{')
	if len(metadata) > 0 {
		keys := slices.Sorted(func(yield func(string) bool) {
			for k := range metadata {
				if !yield(k) {
					return
				}
			}
		})
		buf.WriteString(`"__metadata__":{`)
		for i, k := range keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			writeJSONString(&buf, k)
			buf.WriteByte(':')
			writeJSONString(&buf, metadata[k])
		}
		buf.WriteByte('}')
	}
	var offset uint64
	for i := range ordered {
		t := &ordered[i]
		if t.DType >= numDTypes {
			return nil, nil, fmt.Errorf("safetensors: tensor %q: invalid dtype %v", t.Name, t.DType)
		}
		n, ok := t.NumElements()
		if !ok || n > (1<<60)/uint64(max(t.DType.Bits(), 1)) || n*uint64(t.DType.Bits())%8 != 0 {
			return nil, nil, fmt.Errorf("safetensors: tensor %q: shape %v of %s does not fill whole bytes", t.Name, t.Shape, t.DType)
		}
		size := n * uint64(t.DType.Bits()) / 8
		t.DataOffsets = [2]uint64{offset, offset + size}
		offset += size
		if i > 0 || len(metadata) > 0 {
			buf.WriteByte(',')
		}
		writeJSONString(&buf, t.Name)
		buf.WriteString(`:{"dtype":"`)
		buf.WriteString(t.DType.String())
		buf.WriteString(`","shape":[`)
		for j, d := range t.Shape {
			if j > 0 {
				buf.WriteByte(',')
			}
			buf.WriteString(strconv.FormatUint(d, 10))
		}
		fmt.Fprintf(&buf, `],"data_offsets":[%d,%d]}`, t.DataOffsets[0], t.DataOffsets[1])
	}
	buf.WriteByte('}')
	for buf.Len()%8 != 0 {
		buf.WriteByte(' ')
	}
	hdr := buf.Bytes()
	binary.LittleEndian.PutUint64(hdr, uint64(len(hdr)-8))
	return hdr, ordered, nil
}

func writeJSONString(buf *bytes.Buffer, s string) {
	enc, _ := json.Marshal(s) // a string always marshals
	buf.Write(enc)
}
