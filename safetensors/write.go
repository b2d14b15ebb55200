package safetensors

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
)

// A Writer writes a safetensors file in the official writer's layout (see
// EncodeHeader). Tensors are added with Add and written, header first, by
// Close; the header must know every tensor before any data is written.
type Writer struct {
	w        io.Writer
	metadata map[string]string
	infos    []TensorInfo
	data     map[string][]byte
	closed   bool
}

// NewWriter returns a Writer that writes to w.
func NewWriter(w io.Writer) *Writer {
	return &Writer{w: w, data: make(map[string][]byte)}
}

// SetMetadata sets the header's "__metadata__" object.
func (w *Writer) SetMetadata(m map[string]string) { w.metadata = m }

// Add adds a tensor: its name, dtype, shape, and its little-endian,
// row-major bytes, which must be exactly the shape's size. A name added
// twice is an error: the file would hold it once, and readers keep the last.
func (w *Writer) Add(name string, dtype DType, shape []uint64, data []byte) error {
	if w.closed {
		return errors.New("safetensors: Add after Close")
	}
	if _, dup := w.data[name]; dup {
		return fmt.Errorf("safetensors: tensor %q added twice", name)
	}
	info := TensorInfo{Name: name, DType: dtype, Shape: shape}
	size, err := byteSize(info)
	if err != nil {
		return err
	}
	if size != uint64(len(data)) {
		return fmt.Errorf("safetensors: tensor %q: shape %s of %s needs %d bytes, got %d", name, FormatShape(shape), dtype, size, len(data))
	}
	w.infos = append(w.infos, info)
	w.data[name] = data
	return nil
}

// Close writes the header and every tensor's bytes. It does not close the
// underlying writer.
func (w *Writer) Close() error {
	if w.closed {
		return nil
	}
	w.closed = true
	hdr, ordered, err := EncodeHeader(w.infos, w.metadata)
	if err != nil {
		return err
	}
	if _, err := w.w.Write(hdr); err != nil {
		return err
	}
	for _, t := range ordered {
		if _, err := w.w.Write(w.data[t.Name]); err != nil {
			return err
		}
	}
	return nil
}

// byteSize is the size of a tensor's data, checked to fill whole bytes and
// to stay far from overflow.
func byteSize(t TensorInfo) (uint64, error) {
	if !t.DType.Valid() {
		return 0, fmt.Errorf("safetensors: tensor %q: invalid dtype %v", t.Name, t.DType)
	}
	n, ok := t.NumElements()
	if !ok || n > (1<<60)/uint64(t.DType.Bits()) || n*uint64(t.DType.Bits())%8 != 0 {
		return 0, fmt.Errorf("safetensors: tensor %q: shape %s of %s does not fill whole bytes", t.Name, FormatShape(t.Shape), t.DType)
	}
	return n * uint64(t.DType.Bits()) / 8, nil
}

// EncodeHeader lays out tensors as the official writer does and returns the
// 8-byte length and JSON header, and the tensors with their DataOffsets in
// file order. The DataOffsets of the input are ignored; a name given twice
// is an error. Tensors are ordered by dtype, larger first, then by name, so
// every tensor is aligned to its element size; the header is padded with
// spaces to a multiple of 8 bytes. Callers that stream large data write the
// header, then each tensor's bytes in the returned order.
func EncodeHeader(tensors []TensorInfo, metadata map[string]string) ([]byte, []TensorInfo, error) {
	if err := noDuplicates(tensors); err != nil {
		return nil, nil, err
	}
	ordered := slices.Clone(tensors)
	slices.SortStableFunc(ordered, func(a, b TensorInfo) int {
		return cmp.Or(cmp.Compare(b.DType, a.DType), cmp.Compare(a.Name, b.Name))
	})
	var buf bytes.Buffer
	buf.Write(make([]byte, 8))
	buf.WriteByte('{')
	if len(metadata) > 0 {
		keys := make([]string, 0, len(metadata))
		for k := range metadata {
			keys = append(keys, k)
		}
		slices.Sort(keys)
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
		size, err := byteSize(*t)
		if err != nil {
			return nil, nil, err
		}
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

// noDuplicates reports a name given twice.
func noDuplicates(ts []TensorInfo) error {
	seen := make(map[string]bool, len(ts))
	for _, t := range ts {
		if seen[t.Name] {
			return fmt.Errorf("safetensors: tensor %q given twice", t.Name)
		}
		seen[t.Name] = true
	}
	return nil
}

func writeJSONString(buf *bytes.Buffer, s string) {
	enc, _ := json.Marshal(s) // a string always marshals
	buf.Write(enc)
}
