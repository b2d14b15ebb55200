package safetensors

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/tensorfile"
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

// TestTorchtitanEmptyEntry: the file torchtitan wrote before PR #3764
// (pytorch/torchtitan 0e886617, 2026-06-27) for a tied lm_head.weight it
// never produced: the reference rejects "" as no dtype, and so do we,
// naming the tensor and the pattern. The entries come from
// torch/distributed/checkpoint/_consolidate_hf_safetensors.py's _FqnData
// defaults (shape [], dtype "", data_offsets [o, o]): alone in its shard,
// and after a real tensor.
func TestTorchtitanEmptyEntry(t *testing.T) {
	for _, header := range []string{
		`{"lm_head.weight":{"shape":[],"dtype":"","data_offsets":[0,0]}}`,
		`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"lm_head.weight":{"shape":[],"dtype":"","data_offsets":[4,4]}}`,
	} {
		_, err := open(raw(header, 4*strings.Count(header, `"F32"`)))
		if kindOf(err) != "invalid_header_deserialization" || !strings.Contains(err.Error(), `tensor "lm_head.weight"`) ||
			!strings.Contains(err.Error(), "torchtitan writes for a key of the published index its model never produced") {
			t.Errorf("%s: %v", header, err)
		}
	}
}

// TestLayoutErrors: a file whose layout is invalid returns no File from
// NewFile; ReadHeader returns its parsed header, and only trailing bytes
// leave every tensor readable.
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
		if f != nil || !errors.As(err, &fe) {
			t.Fatalf("%s: f = %v, err = %v", tt.name, f, err)
		}
		h, err := ReadHeader(bytes.NewReader(tt.file), int64(len(tt.file)))
		if err != nil || len(h.Tensors) != 1 {
			t.Fatalf("%s: ReadHeader: %v", tt.name, err)
		}
		if lerr := h.CheckLayout(); lerr == nil || lerr.Error() != fe.Error() {
			t.Errorf("%s: CheckLayout() = %v, want %v", tt.name, lerr, fe)
		}
		if (h.Trailing() > 0) != tt.trailing {
			t.Errorf("%s: Trailing() = %d", tt.name, h.Trailing())
		}
	}
}

// TestNoBytesOutsideTheDataSection: whatever the header claims, a tensor's
// reader covers only the part of its range that lies inside the data
// section: never the header's bytes, never past the end of the file.
// Every file here has a layout error, so its tensors are reached through
// ReadHeader, as validate reaches them.
func TestNoBytesOutsideTheDataSection(t *testing.T) {
	u8 := func(name string, begin, end uint64) string {
		return fmt.Sprintf(`"%s":{"dtype":"U8","shape":[%d],"data_offsets":[%d,%d]}`, name, end-begin, begin, end)
	}
	tests := []struct {
		name   string
		header string
		data   int
	}{
		{"truncated: 16 bytes claimed, 6 there", "{" + t1 + "}", 6},
		{"trailing bytes", "{" + u8("a", 0, 4) + "}", 9},
		{"offsets far past the end", "{" + u8("a", 0, 4) + "," + u8("x", 1<<62, 1<<62+4) + "}", 4},
		{"offsets at the top of uint64", "{" + u8("a", 0, 4) + "," + u8("x", 1<<64-5, 1<<64-1) + "}", 4},
		{"reversed offsets", "{" + u8("a", 0, 4) + `,"x":{"dtype":"U8","shape":[4],"data_offsets":[8,4]}}`, 8},
		{"a gap before the tensor", "{" + u8("a", 2, 6) + "}", 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := raw(tt.header, tt.data)
			dataStart := len(b) - tt.data
			for i := dataStart; i < len(b); i++ {
				b[i] = byte(0x80 | i) // unlike any header byte
			}
			f, err := ReadHeader(bytes.NewReader(b), int64(len(b)))
			var fe *FormatError
			if err != nil || !errors.As(f.CheckLayout(), &fe) {
				t.Fatalf("err = %v; want a header with a layout error", err)
			}
			if f.DataOffset() != int64(dataStart) {
				t.Fatalf("data section at %d, want %d", f.DataOffset(), dataStart)
			}
			data := b[dataStart:]
			if got, err := io.ReadAll(f.DataSection()); err != nil || !bytes.Equal(got, data) {
				t.Errorf("data section = %x, %v; want %x", got, err, data)
			}
			for _, ten := range f.Tensors {
				r := ten.Open()
				_, off, n := r.Outer()
				if off < int64(dataStart) || off+n > int64(len(b)) {
					t.Errorf("%s: reader over file bytes [%d, %d), outside the data section [%d, %d)", ten.Name, off, off+n, dataStart, len(b))
				}
				// What lies inside the data section of [begin, end).
				begin, end := ten.DataOffsets[0], max(ten.DataOffsets[0], ten.DataOffsets[1])
				begin, end = min(begin, uint64(len(data))), min(end, uint64(len(data)))
				want := data[begin:end]
				if got, err := io.ReadAll(r); err != nil || !bytes.Equal(got, want) {
					t.Errorf("%s %v: read %x, %v; want %x", ten.Name, ten.DataOffsets, got, err, want)
				}
			}
		})
	}
}

func TestWriterAndTensorOpen(t *testing.T) {
	var buf bytes.Buffer
	tensors := []struct {
		name  string
		dtype DType
		shape []uint64
		data  []byte
	}{
		{"x", U8, []uint64{2, 4}, []byte{1, 2, 3, 4, 5, 6, 7, 8}},
		{"s", F32, []uint64{}, []byte{0, 0, 128, 63}},
		{"e", BF16, []uint64{0, 3}, nil},
	}
	w := NewWriter(&buf)
	w.SetMetadata(map[string]string{"format": "pt"})
	for _, x := range tensors {
		if err := w.Add(x.name, x.dtype, x.shape, x.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := open(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if f.HeaderSize%8 != 0 || f.Metadata["format"] != "pt" || len(f.Tensors) != len(tensors) {
		t.Fatalf("header size %d, metadata %v, %d tensors", f.HeaderSize, f.Metadata, len(f.Tensors))
	}
	for _, x := range tensors {
		got := f.Tensor(x.name)
		if got == nil {
			t.Errorf("no %s", x.name)
			continue
		}
		data, err := io.ReadAll(got.Open())
		if err != nil || !bytes.Equal(data, x.data) || got.DType != x.dtype || !slices.Equal(got.Shape, x.shape) {
			t.Errorf("%s = %s %v %v, %v; want %s %v %v", x.name, got.DType, got.Shape, data, err, x.dtype, x.shape, x.data)
		}
	}
	// The official order: larger dtype first, then by name.
	var order []string
	for _, x := range f.Tensors {
		order = append(order, x.Name)
	}
	if want := []string{"s", "e", "x"}; !slices.Equal(order, want) || f.Tensors[0].DataOffsets[0] != 0 {
		t.Errorf("order %v, want %v", order, want)
	}
}

// TestWriterRefuses: an Add that would make a file the reader rejects (or
// reads differently) is refused, and leaves the Writer as it was: Close
// still writes a valid file of the tensors added before.
func TestWriterRefuses(t *testing.T) {
	type add struct {
		name  string
		dtype DType
		shape []uint64
		data  []byte
	}
	one := add{"x", U8, []uint64{1}, []byte{1}}
	tests := []struct {
		name    string
		before  []add
		refused add
		want    string // in the error
	}{
		{"wrong size", nil, add{"x", F32, []uint64{2}, []byte{1}}, "needs 8 bytes, got 1"},
		{"duplicate name", []add{one}, add{"x", F32, []uint64{1}, make([]byte, 4)}, `tensor "x" added twice`},
		{"duplicate name, same entry", []add{one}, one, `tensor "x" added twice`},
		{"sub-byte remainder", nil, add{"x", F4, []uint64{3}, []byte{0, 0}}, "does not fill whole bytes"},
		{"invalid dtype", nil, add{"x", DType(200), []uint64{1}, []byte{0}}, "invalid dtype"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			w := NewWriter(&buf)
			for _, a := range tt.before {
				if err := w.Add(a.name, a.dtype, a.shape, a.data); err != nil {
					t.Fatalf("Add(%s) before the refused one: %v", a.name, err)
				}
			}
			r := tt.refused
			if err := w.Add(r.name, r.dtype, r.shape, r.data); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one with %q", err, tt.want)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			f, err := open(buf.Bytes())
			if err != nil {
				t.Fatalf("the file written after a refused Add: %v", err)
			}
			if len(f.Tensors) != len(tt.before) || len(f.Duplicates) != 0 {
				t.Errorf("tensors %v, duplicates %v; want the %d added before", f.Tensors, f.Duplicates, len(tt.before))
			}
			for _, a := range tt.before {
				if x := f.Tensor(a.name); x == nil || x.DType != a.dtype {
					t.Errorf("%s = %+v, want the tensor added first", a.name, x)
				}
			}
		})
	}
	closed := NewWriter(io.Discard)
	if err := closed.Close(); err != nil {
		t.Fatal(err)
	}
	if err := closed.Add("x", U8, []uint64{1}, []byte{1}); err == nil {
		t.Error("Add after Close: want an error")
	}
	if _, _, err := EncodeHeader([]TensorInfo{{Name: "a", DType: U8, Shape: []uint64{1}}, {Name: "a", DType: F32, Shape: []uint64{1}}}, nil); err == nil {
		t.Error("EncodeHeader: want an error for a name given twice")
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
		if prefix := b[:min(len(b), tensorfile.SniffLen)]; !(format{}).Sniff(prefix, int64(len(b))) &&
			len(bytes.TrimLeft(prefix[8:], " \t\r\n")) > 0 {
			t.Fatalf("accepted file does not sniff as safetensors: %q", prefix)
		}
		for i := range file.NumTensors() {
			ti, want := file.TensorInfo(i), file.Tensors[i]
			if ti.Offset != file.DataOffset()+int64(want.DataOffsets[0]) || uint64(ti.Size) != want.Size() {
				t.Fatalf("TensorInfo(%d) = %+v, header says %+v", i, ti, want.TensorInfo)
			}
		}
		if total != uint64(len(b))-8-file.HeaderSize {
			t.Fatalf("tensors hold %d bytes, data section is %d", total, uint64(len(b))-8-file.HeaderSize)
		}
	})
}
