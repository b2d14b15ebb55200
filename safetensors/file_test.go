package safetensors

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"
)

// raw builds a file: the 8-byte length of header, header, then data zero bytes.
func raw(header string, data int) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	b = append(b, header...)
	return append(b, make([]byte, data)...)
}

func lenPrefix(n uint64, rest string) []byte {
	return append(binary.LittleEndian.AppendUint64(nil, n), rest...)
}

func open(b []byte) (*File, error) { return NewFile(bytes.NewReader(b), int64(len(b))) }

func kindOf(err error) string {
	var fe *FormatError
	if errors.As(err, &fe) {
		return fe.Kind.String()
	}
	if err != nil {
		return "other: " + err.Error()
	}
	return ""
}

const t1 = `"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}`

func TestNewFileRules(t *testing.T) {
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	tests := []struct {
		name string
		file []byte
		want string // error kind, "" for a valid file
	}{
		{"empty file", nil, "header_too_small"},
		{"7 bytes", []byte("1234567"), "header_too_small"},
		{"header too large", lenPrefix(100_000_001, "{}"), "header_too_large"},
		{"max u64 length", lenPrefix(^uint64(0), "{}"), "header_too_large"},
		{"git lfs pointer", []byte("version https://git-lfs.github.com/spec/v1\noid sha256:abc\nsize 12\n"), "header_too_large"},
		{"length past end", lenPrefix(100, "{}"), "invalid_header_length"},
		{"limit but past end", lenPrefix(100_000_000, "{}"), "invalid_header_length"},
		{"not utf8", raw("{\"\xff\":1}", 0), "invalid_header"},
		{"zero length header", lenPrefix(0, ""), "invalid_header_deserialization"},
		{"empty object", raw("{}", 0), ""},
		{"leading whitespace", raw(" \n\t\r{}", 0), ""},
		{"trailing whitespace", raw("{}   ", 0), ""},
		{"trailing garbage", raw("{}x", 0), "invalid_header_deserialization"},
		{"trailing nul", raw("{}\x00", 0), "invalid_header_deserialization"},
		{"root array", raw("[]", 0), "invalid_header_deserialization"},
		{"root string", raw(`"x"`, 0), "invalid_header_deserialization"},
		{"one tensor", raw("{"+t1+"}", 16), ""},
		{"reference: 14 bytes for 16", raw(`{"test":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]}}`, 14), "metadata_incomplete_buffer"},
		{"trailing data bytes", raw("{"+t1+"}", 17), "metadata_incomplete_buffer"},
		{"data but no tensors", raw("{}", 1), "metadata_incomplete_buffer"},
		{"unknown dtype", raw(`{"a":{"dtype":"X","shape":[],"data_offsets":[0,0]}}`, 0), "invalid_header_deserialization"},
		{"dtype is case-sensitive", raw(`{"a":{"dtype":"f32","shape":[1],"data_offsets":[0,4]}}`, 4), "invalid_header_deserialization"},
		{"missing dtype", raw(`{"a":{"shape":[1],"data_offsets":[0,4]}}`, 4), "invalid_header_deserialization"},
		{"missing shape", raw(`{"a":{"dtype":"F32","data_offsets":[0,4]}}`, 4), "invalid_header_deserialization"},
		{"missing offsets", raw(`{"a":{"dtype":"F32","shape":[1]}}`, 4), "invalid_header_deserialization"},
		{"one offset", raw(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[4]}}`, 4), "invalid_header_deserialization"},
		{"three offsets", raw(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4,4]}}`, 4), "invalid_header_deserialization"},
		{"negative", raw(`{"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}}`, 4), "invalid_header_deserialization"},
		{"float", raw(`{"a":{"dtype":"F32","shape":[1.0],"data_offsets":[0,4]}}`, 4), "invalid_header_deserialization"},
		{"exponent", raw(`{"a":{"dtype":"F32","shape":[1e0],"data_offsets":[0,4]}}`, 4), "invalid_header_deserialization"},
		{"minus zero", raw(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[-0,4]}}`, 4), "invalid_header_deserialization"},
		{"string number", raw(`{"a":{"dtype":"F32","shape":["1"],"data_offsets":[0,4]}}`, 4), "invalid_header_deserialization"},
		{"above u64", raw(`{"a":{"dtype":"F32","shape":[18446744073709551616],"data_offsets":[0,4]}}`, 4), "invalid_header_deserialization"},
		{"leading zero", raw(`{"a":{"dtype":"F32","shape":[01],"data_offsets":[0,4]}}`, 4), "invalid_header_deserialization"},
		{"trailing comma", raw(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},}`, 4), "invalid_header_deserialization"},
		{"comment", raw(`{/**/}`, 0), "invalid_header_deserialization"},
		{"single quotes", raw(`{'a':1}`, 0), "invalid_header_deserialization"},
		{"metadata", raw(`{"__metadata__":{"format":"pt"},`+t1+`}`, 16), ""},
		{"metadata null", raw(`{"__metadata__":null}`, 0), ""},
		{"metadata not string", raw(`{"__metadata__":{"a":1}}`, 0), "invalid_header_deserialization"},
		{"metadata array", raw(`{"__metadata__":[]}`, 0), "invalid_header_deserialization"},
		{"metadata string", raw(`{"__metadata__":"x"}`, 0), "invalid_header_deserialization"},
		{"metadata twice", raw(`{"__metadata__":{},"__metadata__":{}}`, 0), "invalid_header_deserialization"},
		{"metadata key twice keeps last", raw(`{"__metadata__":{"a":"1","a":"2"}}`, 0), ""},
		{"duplicate field", raw(`{"a":{"dtype":"F32","dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, 4), "invalid_header_deserialization"},
		{"extra field", raw(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":{"y":[1.5,null,true,"\u00e9"]}}}`, 4), ""},
		{"extra field twice", raw(`{"a":{"x":1,"x":2,"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, 4), ""},
		{"entry as array", raw(`{"a":["F32",[1],[0,4]]}`, 4), ""},
		{"entry as short array", raw(`{"a":["F32",[1]]}`, 4), "invalid_header_deserialization"},
		{"entry as number", raw(`{"a":1}`, 0), "invalid_header_deserialization"},
		{"entry null", raw(`{"a":null}`, 0), "invalid_header_deserialization"},
		{"shape null", raw(`{"a":{"dtype":"F32","shape":null,"data_offsets":[0,4]}}`, 4), "invalid_header_deserialization"},
		{"lone high surrogate", raw(`{"\ud800":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, 4), "invalid_header_deserialization"},
		{"lone low surrogate", raw(`{"\udc00":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, 4), "invalid_header_deserialization"},
		{"lone surrogate in extra field", raw(`{"a":{"x":"\ud800","dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, 4), "invalid_header_deserialization"},
		{"surrogate pair", raw(`{"\ud83d\ude00":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, 4), ""},
		{"escapes", raw(`{"a\"\\\/\b\f\n\r\t\u0000":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, 4), ""},
		{"bad escape", raw(`{"\x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, 4), "invalid_header_deserialization"},
		{"raw control character", raw("{\"a\x01\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4), "invalid_header_deserialization"},
		{"nesting 127", raw(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":`+deep(125)+`}}`, 4), ""},
		{"nesting 128", raw(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":`+deep(126)+`}}`, 4), "invalid_header_deserialization"},
		{"float overflow in extra field", raw(`{"a":{"x":1e999,"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, 4), "invalid_header_deserialization"},
		{"scalar", raw(`{"a":{"dtype":"F32","shape":[],"data_offsets":[0,4]}}`, 4), ""},
		{"zero-size", raw(`{"a":{"dtype":"F32","shape":[3,0],"data_offsets":[0,0]}}`, 0), ""},
		{"gap at start", raw(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, 8), "invalid_offset"},
		{"end before begin", raw(`{"a":{"dtype":"F32","shape":[0],"data_offsets":[0,0]},"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"c":{"dtype":"F32","shape":[1],"data_offsets":[4,0]}}`, 4), "invalid_offset"},
		{"overlap", raw(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[2,6]}}`, 6), "invalid_offset"},
		{"overflow", raw(`{"a":{"dtype":"F32","shape":[4611686018427387904,2],"data_offsets":[0,4]}}`, 4), "validation_overflow"},
		{"bits overflow", raw(`{"a":{"dtype":"F64","shape":[4611686018427387904],"data_offsets":[0,4]}}`, 4), "validation_overflow"},
		{"F4 odd count", raw(`{"a":{"dtype":"F4","shape":[3],"data_offsets":[0,2]}}`, 2), "misaligned_slice"},
		{"F4 even count", raw(`{"a":{"dtype":"F4","shape":[2],"data_offsets":[0,1]}}`, 1), ""},
		{"F6 four", raw(`{"a":{"dtype":"F6_E2M3","shape":[4],"data_offsets":[0,3]}}`, 3), ""},
		{"wrong size", raw(`{"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,15]}}`, 15), "tensor_invalid_info"},
		{"fp8", raw(`{"a":{"dtype":"F8_E4M3","shape":[3],"data_offsets":[0,3]}}`, 3), ""},
		{"all new dtypes", raw(`{"a":{"dtype":"F8_E8M0","shape":[1],"data_offsets":[0,1]},"b":{"dtype":"F8_E4M3FNUZ","shape":[1],"data_offsets":[1,2]},"c":{"dtype":"F8_E5M2FNUZ","shape":[1],"data_offsets":[2,3]},"d":{"dtype":"C64","shape":[1],"data_offsets":[3,11]},"e":{"dtype":"U16","shape":[1],"data_offsets":[11,13]}}`, 13), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := open(tt.file)
			if got := kindOf(err); got != tt.want {
				t.Errorf("got %q (%v), want %q", got, err, tt.want)
			}
		})
	}
}

func TestDuplicateNameKeepsLast(t *testing.T) {
	f, err := open(raw(`{"a":{"dtype":"F32","shape":[9],"data_offsets":[0,36]},"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, 8))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Tensors) != 2 || len(f.Duplicates) != 1 || f.Duplicates[0] != "a" {
		t.Fatalf("tensors %v duplicates %v", f.Tensors, f.Duplicates)
	}
	a := f.Tensor("a")
	if a == nil || a.DataOffsets != [2]uint64{4, 8} {
		t.Errorf("a = %+v, want the last entry", a)
	}
}

func TestLFSPointerMessage(t *testing.T) {
	_, err := open([]byte("version https://git-lfs.github.com/spec/v1\noid sha256:00\nsize 1\n"))
	if err == nil || !strings.Contains(err.Error(), "Git LFS pointer") {
		t.Errorf("err = %v, want it to name the Git LFS pointer", err)
	}
}

// TestLayoutErrors: a file whose layout is invalid returns no File, but
// the error carries the parsed header; only trailing bytes leave every
// tensor readable.
func TestLayoutErrors(t *testing.T) {
	tests := []struct {
		name     string
		file     []byte
		trailing bool
	}{
		{"truncated", raw("{"+t1+"}", 14), false},
		{"trailing bytes", raw("{"+t1+"}", 19), true},
		{"gap", raw(`{"a":{"dtype":"U8","shape":[2],"data_offsets":[2,4]}}`, 4), false},
	}
	for _, tt := range tests {
		f, err := open(tt.file)
		var fe *FormatError
		if f != nil || !errors.As(err, &fe) || fe.File == nil || len(fe.File.Tensors) != 1 {
			t.Fatalf("%s: f = %v, err = %v", tt.name, f, err)
		}
		if fe.Trailing() != tt.trailing {
			t.Errorf("%s: Trailing() = %v", tt.name, fe.Trailing())
		}
	}
}

// TestNoBytesOutsideTheDataSection: whatever the header claims, a tensor's
// reader never returns the header's bytes or reads past the file.
func TestNoBytesOutsideTheDataSection(t *testing.T) {
	// Truncated: the tensor claims 16 bytes, 6 are there.
	b := raw("{"+t1+"}", 6)
	for i := len(b) - 6; i < len(b); i++ {
		b[i] = 0xAA
	}
	_, err := open(b)
	var fe *FormatError
	if !errors.As(err, &fe) || fe.File == nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(fe.File.Tensors[0].Open())
	if err != nil || !bytes.Equal(got, bytes.Repeat([]byte{0xAA}, 6)) {
		t.Errorf("read %x, %v; want the 6 data bytes only", got, err)
	}
	sec := fe.File.DataSection()
	if sec.Size() != 6 {
		t.Errorf("data section of %d bytes, want 6", sec.Size())
	}
	// Offsets far past the end: an empty reader, not the header.
	hostile := &Tensor{TensorInfo: TensorInfo{Name: "x", DType: U8, Shape: []uint64{4}, DataOffsets: [2]uint64{1 << 62, 1<<62 + 4}}, f: fe.File}
	if n, _ := io.ReadAll(hostile.Open()); len(n) != 0 {
		t.Errorf("read %d bytes past the end", len(n))
	}
}

func TestWriterAndTensorOpen(t *testing.T) {
	var buf bytes.Buffer
	data := []byte{1, 2, 3, 4, 5, 6, 7, 8}
	w := NewWriter(&buf)
	w.SetMetadata(map[string]string{"format": "pt"})
	if err := w.Add("x", U8, []uint64{2, 4}, data); err != nil {
		t.Fatal(err)
	}
	if err := w.Add("s", F32, []uint64{}, []byte{0, 0, 128, 63}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := open(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if f.HeaderSize%8 != 0 || f.Metadata["format"] != "pt" {
		t.Errorf("header size %d, metadata %v", f.HeaderSize, f.Metadata)
	}
	x := f.Tensor("x")
	if x == nil {
		t.Fatal("no x")
	}
	got, err := io.ReadAll(x.Open())
	if err != nil || !bytes.Equal(got, data) {
		t.Errorf("x = %v, %v", got, err)
	}
	// The official order: larger dtype first.
	if f.Tensors[0].Name != "s" || f.Tensors[0].DataOffsets[0] != 0 {
		t.Errorf("order = %v", f.Tensors)
	}
}

func TestWriterRefuses(t *testing.T) {
	tests := []struct {
		name string
		add  func(w *Writer) error
	}{
		{"wrong size", func(w *Writer) error { return w.Add("x", F32, []uint64{2}, []byte{1}) }},
		{"duplicate name", func(w *Writer) error {
			if err := w.Add("x", U8, []uint64{1}, []byte{1}); err != nil {
				return nil // the first Add must succeed; report no refusal
			}
			return w.Add("x", F32, []uint64{1}, make([]byte, 4))
		}},
		{"sub-byte remainder", func(w *Writer) error { return w.Add("x", F4, []uint64{3}, []byte{0, 0}) }},
	}
	for _, tt := range tests {
		if err := tt.add(NewWriter(&bytes.Buffer{})); err == nil {
			t.Errorf("%s: want an error", tt.name)
		}
	}
	if _, _, err := EncodeHeader([]TensorInfo{{Name: "a", DType: U8, Shape: []uint64{1}}, {Name: "a", DType: F32, Shape: []uint64{1}}}, nil); err == nil {
		t.Error("EncodeHeader: want an error for a name given twice")
	}
}

func TestLookupDType(t *testing.T) {
	for name, want := range map[string]DType{"bf16": BF16, "BF16": BF16, "bfloat16": BF16, "torch.float32": F32,
		"fp16": F16, "half": F16, "F8_E4M3": F8_E4M3, "float8_e4m3fn": F8_E4M3, "i64": I64, "int64": I64} {
		if got, ok := LookupDType(name); !ok || got != want {
			t.Errorf("LookupDType(%q) = %v, %v; want %v", name, got, ok, want)
		}
	}
	if _, ok := LookupDType("float128"); ok {
		t.Error("float128 is no dtype")
	}
}

func TestDTypes(t *testing.T) {
	if len(DTypes()) != 22 {
		t.Fatalf("%d dtypes, want the reference's 22", len(DTypes()))
	}
	bits := map[string]int{"BOOL": 8, "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8,
		"F8_E8M0": 8, "F8_E4M3FNUZ": 8, "F8_E5M2FNUZ": 8, "I16": 16, "U16": 16, "F16": 16, "BF16": 16, "I32": 32,
		"U32": 32, "F32": 32, "C64": 64, "F64": 64, "I64": 64, "U64": 64}
	for name, want := range bits {
		d, ok := ParseDType(name)
		if !ok || d.Bits() != want || d.String() != name {
			t.Errorf("%s: parsed %v %v, bits %d, want %d", name, d, ok, d.Bits(), want)
		}
	}
	if _, ok := ParseDType("bf16"); ok {
		t.Error("dtype names are case-sensitive")
	}
}

// FuzzNewFile checks that no input panics or allocates by a number in it, and
// that whatever is accepted tiles the data section exactly.
func FuzzNewFile(f *testing.F) {
	f.Add(raw("{"+t1+"}", 16))
	f.Add(raw(`{"__metadata__":{"a":"b"},"x":{"dtype":"BF16","shape":[],"data_offsets":[0,2]}}`, 2))
	f.Add(raw(`{"a":["F4",[2],[0,1]]}`, 1))
	f.Add(lenPrefix(1<<60, "{}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := open(b)
		if err != nil {
			return
		}
		if 8+file.HeaderSize > uint64(len(b)) {
			t.Fatalf("header size %d beyond %d bytes", file.HeaderSize, len(b))
		}
		var total uint64
		for _, ti := range file.Tensors {
			n, ok := ti.NumElements()
			if !ok || n*uint64(ti.DType.Bits())/8 != ti.Size() || ti.DataOffsets[1] < ti.DataOffsets[0] {
				t.Fatalf("accepted inconsistent tensor %+v", ti)
			}
			total += ti.Size()
		}
		if total != uint64(len(b))-8-file.HeaderSize {
			t.Fatalf("tensors hold %d bytes, data section is %d", total, uint64(len(b))-8-file.HeaderSize)
		}
	})
}
