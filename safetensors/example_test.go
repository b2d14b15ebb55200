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
	w.Add("w", safetensors.BF16, []uint64{2, 2}, []byte{1, 2, 3, 4, 5, 6, 7, 8})
	w.Close()
	f, err := safetensors.NewFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		panic(err)
	}
	for _, t := range f.Tensors {
		n, _ := t.NumElements()
		data, _ := io.ReadAll(t.Open())
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
		fmt.Println(f == nil, fe.Kind, len(fe.File.Tensors), fe.Trailing())
	}
	// Output: true metadata_incomplete_buffer 1 false
}
