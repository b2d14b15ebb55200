package safetensors_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/ckptcheck/ckptcheck/safetensors"
)

func ExampleWrite() {
	var buf bytes.Buffer
	one := binary.LittleEndian.AppendUint32(nil, math.Float32bits(1))
	err := safetensors.Write(&buf, []safetensors.Tensor{
		{Name: "scale", DType: safetensors.F32, Shape: []uint64{}, Data: one},
		{Name: "ids", DType: safetensors.I8, Shape: []uint64{3}, Data: []byte{1, 2, 3}},
	}, map[string]string{"format": "pt"})
	fmt.Println(buf.Len(), err)
	// Output: 159 <nil>
}

func ExampleNewFile() {
	var buf bytes.Buffer
	safetensors.Write(&buf, []safetensors.Tensor{
		{Name: "w", DType: safetensors.BF16, Shape: []uint64{2, 2}, Data: make([]byte, 8)},
	}, nil)
	f, err := safetensors.NewFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		panic(err)
	}
	for _, t := range f.Tensors {
		n, _ := t.NumElements()
		fmt.Println(t.Name, t.DType, safetensors.FormatShape(t.Shape), n, "elements at", f.DataOffset()+int64(t.DataOffsets[0]))
	}
	// Output: w BF16 [2, 2] 4 elements at 72
}

func ExampleFormatError() {
	// 14 data bytes for a tensor that needs 16: the reference's own case.
	header := `{"test":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]}}`
	file := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	file = append(append(file, header...), make([]byte, 14)...)
	_, err := safetensors.NewFile(bytes.NewReader(file), int64(len(file)))
	var fe *safetensors.FormatError
	if errors.As(err, &fe) {
		fmt.Println(fe.Kind)
	}
	// Output: metadata_incomplete_buffer
}

func ExampleDecodeFloat64() {
	vals := make([]float64, 3)
	safetensors.DecodeFloat64(safetensors.F8_E4M3, []byte{0x38, 0x7E, 0x7F}, vals)
	fmt.Println(vals)
	// Output: [1 448 NaN]
}
