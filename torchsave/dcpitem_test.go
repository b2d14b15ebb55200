package torchsave

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// blob is a safetensors blob of header (padded to 8 bytes) and data, after
// lead bytes of other items.
func blob(lead, header string, data []byte) []byte {
	h := header + strings.Repeat(" ", -len(header)&7)
	b := append([]byte(lead), binary.LittleEndian.AppendUint64(nil, uint64(len(h)))...)
	return append(append(b, h...), data...)
}

func TestDCPItemsSafetensors(t *testing.T) {
	w := &DCPTensor{FQN: "w", DType: tensorfile.F32, Shape: []uint64{4}}
	chunk := func(off, length uint64) DCPChunk {
		return DCPChunk{Offsets: []uint64{0}, Sizes: []uint64{4}, Item: DCPItem{RelativePath: "__0_0.distcp", Offset: off, Length: length}}
	}
	data := make([]byte, 16)
	for i := range 4 {
		binary.LittleEndian.PutUint32(data[4*i:], uint32(i))
	}
	const entry = `"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}`
	tests := []struct {
		name string
		file []byte
		c    DCPChunk
		want string // in the error; "" for none
	}{
		{"after a byte item", blob("state", `{"__metadata__":{"DCP_VERSION":"1.0"},`+entry+`}`, data), chunk(5, 16), ""},
		{"no entry", blob("", `{"v":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}`, data), chunk(0, 16), `no entry "w"`},
		{"another dtype", blob("", `{"w":{"dtype":"I32","shape":[4],"data_offsets":[0,16]}}`, data), chunk(0, 16), "I32 [4], want F32 [4]"},
		{"short data_offsets", blob("", `{"w":{"dtype":"F32","shape":[4],"data_offsets":[0,8]}}`, data), chunk(0, 16), "do not hold"},
		{"data past the file", blob("", `{"w":{"dtype":"F32","shape":[4],"data_offsets":[16,32]}}`, data), chunk(0, 16), "reach past the file"},
		{"not JSON", blob("", `{"w":`, data), chunk(0, 16), "not JSON"},
		// A header length past the file is no safetensors blob: read as
		// an archive, it is not one.
		{"header length past the file", append(binary.LittleEndian.AppendUint64(nil, 1<<40), '{'), chunk(0, 9), "not a zip archive"},
	}
	for _, tt := range tests {
		got, err := NewDCPItems().Chunk(bytes.NewReader(tt.file), int64(len(tt.file)), w, tt.c)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.want == "" && !bytes.Equal(tt.file[int64(tt.c.Item.Offset)+got.Offset:][:got.Size], data):
			t.Errorf("%s: %+v does not hold the data", tt.name, got.TensorInfo)
		case tt.want != "":
			var fe *FormatError
			if !errors.As(err, &fe) || !strings.Contains(fe.Msg, tt.want) {
				t.Errorf("%s: %v, want a FormatError saying %q", tt.name, err, tt.want)
			}
		}
	}
}
