package safetensors_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/ckptcheck/ckptcheck/safetensors"
)

func ExampleWriter() {
	var buf bytes.Buffer
	w := safetensors.NewWriter(&buf)
	w.SetMetadata(map[string]string{"format": "pt"})
	one := binary.LittleEndian.AppendUint32(nil, math.Float32bits(1))
	w.Add("scale", safetensors.F32, []uint64{}, one)
	w.Add("ids", safetensors.I8, []uint64{3}, []byte{1, 2, 3})
	err := w.Add("ids", safetensors.I8, []uint64{3}, []byte{4, 5, 6})
	fmt.Println(err)
	fmt.Println(buf.Len(), w.Close(), buf.Len())
	// Output:
	// safetensors: tensor "ids" added twice
	// 0 <nil> 159
}

func ExampleNewFile() {
	var buf bytes.Buffer
	w := safetensors.NewWriter(&buf)
	if err := w.Add("w", safetensors.BF16, []uint64{2, 2}, []byte{1, 2, 3, 4, 5, 6, 7, 8}); err != nil {
		fmt.Println(err)
		return
	}
	if err := w.Close(); err != nil {
		fmt.Println(err)
		return
	}
	f, err := safetensors.NewFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, t := range f.Tensors {
		n, _ := t.NumElements()
		data, err := io.ReadAll(t.Open())
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(t.Name, t.DType, safetensors.FormatShape(t.Shape), n, "elements:", data)
	}
	// Output: w BF16 [2, 2] 4 elements: [1 2 3 4 5 6 7 8]
}

func ExampleFormatError() {
	// 14 data bytes for a tensor that needs 16: the reference's own case.
	header := `{"test":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]}}`
	file := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	file = append(append(file, header...), make([]byte, 14)...)
	f, err := safetensors.NewFile(bytes.NewReader(file), int64(len(file)))
	var fe *safetensors.FormatError
	if errors.As(err, &fe) {
		fmt.Println(f == nil, fe.Kind)
	}
	// ReadHeader still shows what the header describes.
	h, err := safetensors.ReadHeader(bytes.NewReader(file), int64(len(file)))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(h.Tensors), h.CheckLayout() != nil, h.Trailing())
	// Output:
	// true metadata_incomplete_buffer
	// 1 true 0
}

// A file with bytes after its last tensor is refused by the reference, but
// every tensor in it is whole: ReadHeader opens it, and Trailing counts the
// extra bytes.
func ExampleFile_Trailing() {
	var buf bytes.Buffer
	w := safetensors.NewWriter(&buf)
	if err := w.Add("bias", safetensors.U8, []uint64{4}, []byte{1, 2, 3, 4}); err != nil {
		fmt.Println(err)
		return
	}
	if err := w.Close(); err != nil {
		fmt.Println(err)
		return
	}
	buf.WriteString("junk")
	r := bytes.NewReader(buf.Bytes())
	if _, err := safetensors.NewFile(r, r.Size()); err != nil {
		fmt.Println("NewFile:", err)
	}
	f, err := safetensors.ReadHeader(r, r.Size())
	if err != nil {
		fmt.Println(err)
		return
	}
	data, err := io.ReadAll(f.Tensor("bias").Open())
	fmt.Println(f.Trailing(), data, err)
	// Output:
	// NewFile: metadata_incomplete_buffer: tensors end at data byte 4 but the file has 8 data bytes (4 bytes trailing)
	// 4 [1 2 3 4] <nil>
}
