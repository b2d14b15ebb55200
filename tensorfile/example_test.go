package tensorfile_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"

	_ "github.com/ckptcheck/ckptcheck/safetensors"
	"github.com/ckptcheck/ckptcheck/tensorfile"
)

func ExampleDType_UnmarshalText() {
	// Dtypes are their header names in JSON, both ways.
	var row struct {
		DType tensorfile.DType `json:"dtype"`
	}
	err := json.Unmarshal([]byte(`{"dtype":"BF16"}`), &row)
	fmt.Println(row.DType, row.DType.Bits(), err)
	fmt.Println(json.Unmarshal([]byte(`{"dtype":"bfloat16"}`), &row))
	// Output:
	// BF16 16 <nil>
	// unknown dtype "bfloat16"
}

// A file's name decides its format; where it says nothing, its first bytes
// do. (Package safetensors registers itself when linked.)
func ExampleIdentify() {
	header := `{"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`
	file := append(binary.LittleEndian.AppendUint64(nil, uint64(len(header))), header...)
	file = append(file, 0, 0, 128, 63) // 1.0

	for _, name := range []string{"model.safetensors", "blob", "notes.txt"} {
		prefix := file[:min(len(file), tensorfile.SniffLen)]
		if name == "notes.txt" {
			prefix = []byte("hello")
		}
		f, err := tensorfile.Identify(name, prefix, int64(len(file)))
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Println(name, "is", f.Name())
	}

	// A damaged file named .safetensors gets the safetensors reader's error.
	_, _, err := tensorfile.Open("bad.safetensors", bytes.NewReader([]byte("oops")), 4)
	fmt.Println(err)
	// Output:
	// model.safetensors is safetensors
	// blob is safetensors
	// notes.txt: tensorfile: unknown format
	// bad.safetensors: header_too_small: file is 4 bytes, shorter than the 8-byte header length
}

func ExampleOpen() {
	header := `{"w":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]}}`
	file := append(binary.LittleEndian.AppendUint64(nil, uint64(len(header))), header...)
	file = append(file, 0x80, 0x3F, 0, 0x40) // 1.0, 2.0

	f, format, err := tensorfile.Open("shard", bytes.NewReader(file), int64(len(file)))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.Close()
	for _, t := range tensorfile.Tensors(f) {
		fmt.Println(format.Name(), t.Name, t.DType, tensorfile.FormatShape(t.Shape), "bytes", t.Offset, "to", t.Offset+t.Size)
	}
	// Output: safetensors w BF16 [2] bytes 63 to 67
}
