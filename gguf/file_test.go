package gguf

import (
	"bytes"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	w "github.com/ckptcheck/ckptcheck/internal/ggufwrite"
	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// sample is a small valid file: metadata of every value type, a nested
// array, an F32 matrix, a Q8_0 matrix and a scalar.
func sample() w.File {
	return w.File{
		KV: []w.KV{
			w.P("general.architecture", w.Str("llama")),
			w.P("u8", w.U8(200)), w.P("i8", w.I8(-3)), w.P("u16", w.U16(60000)), w.P("i16", w.I16(-30000)),
			w.P("u32", w.U32(4000000000)), w.P("i32", w.I32(-2000000000)), w.P("f32", w.F32(0.5)),
			w.P("bool", w.Bool(true)), w.P("u64", w.U64(math.MaxUint64)), w.P("i64", w.I64(math.MinInt64)),
			w.P("f64", w.F64(1e300)),
			w.P("tokens", w.Strings("<s>", "</s>", "a")),
			w.P("scores", w.Array(w.TypeFloat32, w.F32(1), w.F32(-2))),
			w.P("nested", w.Array(w.TypeArray, w.Array(w.TypeUint8, w.U8(1), w.U8(2)), w.Array(w.TypeString, w.Str("x")))),
			w.P("template", w.Str(strings.Repeat("x", 1000))),
		},
		Tensors: []w.Tensor{
			{Name: "token_embd.weight", Dims: []uint64{4, 3}, Type: 0, Data: make([]byte, 4*3*4)},
			{Name: "blk.0.attn_q.weight", Dims: []uint64{32, 2}, Type: 8, Data: make([]byte, 2*34)},
			{Name: "scale", Dims: nil, Type: 0, Data: []byte{0, 0, 0x80, 0x3f}},
		},
	}
}

func TestNewFile(t *testing.T) {
	b := sample().Bytes()
	f, err := NewFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	if f.Version != 3 || f.Alignment != 32 || f.Architecture() != "llama" || len(f.KV) != 16 || f.HeaderReads != 1 {
		t.Errorf("version %d, alignment %d, arch %q, %d kv, %d reads", f.Version, f.Alignment, f.Architecture(), len(f.KV), f.HeaderReads)
	}
	scalars := map[string]string{"u8": "200", "i8": "-3", "u16": "60000", "i16": "-30000", "u32": "4000000000",
		"i32": "-2000000000", "f32": "0.5", "bool": "true", "u64": "18446744073709551615", "i64": "-9223372036854775808",
		"f64": "1e+300", "tokens": `["<s>", "</s>", "a"] (3 str)`, "scores": "[1, -2] (2 f32)",
		"nested": `[[1, 2] (2 u8), ["x"] (1 str)] (2 arr)`, "general.architecture": `"llama"`}
	for k, want := range scalars {
		v, ok := f.Lookup(k)
		if !ok || v.String() != want {
			t.Errorf("%s = %v (%v), want %s", k, v, ok, want)
		}
	}
	if f.Meta()["general.architecture"] != "llama" || f.Meta()["template"] != strings.Repeat("x", 256)+"… (1000 bytes)" {
		t.Errorf("Meta = %v", f.Meta())
	}
	if v, _ := f.Lookup("u64"); v.Type != ValueUint64 {
		t.Errorf("u64 type %v", v.Type)
	}
	if v, _ := f.Lookup("nested"); v.Len() != 2 || v.Index(0).Index(1).String() != "2" {
		t.Errorf("nested = %v", v)
	}
	want := []tensorfile.TensorInfo{
		{Name: "token_embd.weight", DType: tensorfile.F32, Shape: []uint64{3, 4}, Offset: f.DataOffset, Size: 48},
		{Name: "blk.0.attn_q.weight", DType: tensorfile.U8, Encoding: tensorfile.Q8_0, Shape: []uint64{2, 32}, Offset: f.DataOffset + 64, Size: 68},
		{Name: "scale", DType: tensorfile.F32, Shape: []uint64{}, Offset: f.DataOffset + 160, Size: 4},
	}
	for i, wt := range want {
		got := f.TensorInfo(i)
		if got.Name != wt.Name || got.DType != wt.DType || got.Encoding != wt.Encoding || !slices.Equal(got.Shape, wt.Shape) || got.Offset != wt.Offset || got.Size != wt.Size {
			t.Errorf("tensor %d = %+v, want %+v", i, got, wt)
		}
	}
	if f.DataOffset%32 != 0 {
		t.Errorf("data offset %d not aligned", f.DataOffset)
	}
	data, _ := io.ReadAll(f.TensorReader(2))
	if !bytes.Equal(data, []byte{0, 0, 0x80, 0x3f}) {
		t.Errorf("tensor bytes %x", data)
	}
}

func TestVersion2AndAlignment(t *testing.T) {
	s := sample()
	s.Version, s.Alignment = 2, 64
	s.KV = append(s.KV, w.KV{Key: AlignmentKey, Value: w.U32(64)})
	b := s.Bytes()
	f, err := NewFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	if f.Version != 2 || f.Alignment != 64 || f.DataOffset%64 != 0 || f.Tensors[1].Offset != 64 {
		t.Errorf("version %d alignment %d data %d offset %d", f.Version, f.Alignment, f.DataOffset, f.Tensors[1].Offset)
	}
}

func TestFormatErrors(t *testing.T) {
	tests := []struct {
		name string
		edit func(*w.File)
		raw  func([]byte) []byte
		kind ErrorKind
		want string // in the message
	}{
		{name: "bad magic", edit: func(f *w.File) { f.Magic = "GGML" }, kind: BadMagic},
		{name: "version 1", edit: func(f *w.File) { f.Version = 1 }, kind: BadVersion},
		{name: "version 4", edit: func(f *w.File) { f.Version = 4 }, kind: BadVersion},
		{name: "big-endian", edit: func(f *w.File) { f.Version = 3 << 24 }, kind: BadVersion, want: "big-endian"},
		{name: "empty", raw: func([]byte) []byte { return nil }, kind: Truncated},
		{name: "truncated in metadata", raw: func(b []byte) []byte { return b[:400] }, kind: Truncated},
		{name: "truncated header counts", raw: func(b []byte) []byte { return b[:20] }, kind: Truncated},
		{name: "tensor count too large", raw: func(b []byte) []byte { copy(b[8:], []byte{0, 0, 0, 0, 0, 0, 0, 1}); return b }, kind: TooLarge},
		{name: "kv count too large", raw: func(b []byte) []byte { copy(b[16:], []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}); return b }, kind: TooLarge},
		{name: "string too long", edit: func(f *w.File) { f.KV[0].Value = w.Raw(w.TypeString, []byte{0, 0, 0, 0, 0, 0, 0, 0x10}) }, kind: TooLarge},
		{name: "array too long", edit: func(f *w.File) {
			f.KV[0].Value = w.Raw(w.TypeArray, append([]byte{w.TypeUint32, 0, 0, 0}, 0, 0, 0, 0, 0, 0, 0, 0x10))
		}, kind: TooLarge},
		{name: "unknown value type", edit: func(f *w.File) { f.KV[1].Value = w.Raw(13, nil) }, kind: BadType},
		{name: "unknown array type", edit: func(f *w.File) { f.KV[1].Value = w.Array(99) }, kind: BadType},
		{name: "unknown ggml type", edit: func(f *w.File) { f.Tensors[0].Type = 4 }, kind: BadType},
		{name: "duplicate key", edit: func(f *w.File) { f.KV[2].Key = "u8" }, kind: Duplicate},
		{name: "duplicate tensor", edit: func(f *w.File) { f.Tensors[2].Name = "token_embd.weight" }, kind: Duplicate},
		{name: "alignment not a power of two", edit: func(f *w.File) { f.KV = append(f.KV, w.KV{Key: AlignmentKey, Value: w.U32(48)}) }, kind: BadAlignment},
		{name: "alignment zero", edit: func(f *w.File) { f.KV = append(f.KV, w.KV{Key: AlignmentKey, Value: w.U32(0)}) }, kind: BadAlignment},
		{name: "alignment huge", edit: func(f *w.File) { f.KV = append(f.KV, w.KV{Key: AlignmentKey, Value: w.U32(1 << 30)}) }, kind: BadAlignment},
		{name: "alignment not u32", edit: func(f *w.File) { f.KV = append(f.KV, w.KV{Key: AlignmentKey, Value: w.U64(32)}) }, kind: BadAlignment},
		{name: "offset not the running sum", edit: func(f *w.File) { f.Tensors[1].Offset, f.Tensors[1].SetOffset = 48, true }, kind: BadOffset},
		{name: "offset past the end", edit: func(f *w.File) { f.Tensors[0].Offset, f.Tensors[0].SetOffset = 1<<40, true }, kind: BadOffset},
		{name: "tensor past the end", raw: func(b []byte) []byte { return b[:len(b)-30] }, kind: TensorPastEnd},
		{name: "row not whole blocks", edit: func(f *w.File) { f.Tensors[1].Dims = []uint64{16, 4} }, kind: BadSize},
		{name: "five dims", edit: func(f *w.File) { f.Tensors[0].Dims = []uint64{1, 1, 1, 1, 48} }, kind: BadSize},
		{name: "element count overflows", edit: func(f *w.File) { f.Tensors[0].Dims = []uint64{1 << 32, 1 << 32} }, kind: BadSize},
		{name: "name too long", edit: func(f *w.File) { f.Tensors[0].Name = strings.Repeat("x", 64) }, kind: BadName},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := sample()
			if tt.edit != nil {
				tt.edit(&s)
			}
			b := s.Bytes()
			if tt.raw != nil {
				b = tt.raw(b)
			}
			f, err := NewFile(bytes.NewReader(b), int64(len(b)))
			var fe *FormatError
			if f != nil || !errors.As(err, &fe) || fe.Kind != tt.kind || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("NewFile = %v, %v; want a %s error with %q", f, err, tt.kind, tt.want)
			}
			if !strings.HasPrefix(err.Error(), tt.kind.String()) {
				t.Errorf("error %q does not start with its code", err)
			}
		})
	}
}

func TestLastTensorUnpadded(t *testing.T) {
	s := sample()
	s.NoTrailingPad = true
	b := s.Bytes()
	if _, err := NewFile(bytes.NewReader(b), int64(len(b))); err != nil {
		t.Errorf("a file without padding after its last tensor: %v", err)
	}
}

// countingReader counts ReadAt calls and the bytes they asked for.
type countingReader struct {
	r     io.ReaderAt
	calls int
	bytes int
}

func (c *countingReader) ReadAt(p []byte, off int64) (int, error) {
	c.calls++
	c.bytes += len(p)
	return c.r.ReadAt(p, off)
}

func TestHeaderReadsGrow(t *testing.T) {
	// A 3 MiB tokenizer: the header takes 1 + 2 + … MiB windows.
	tokens := make([]string, 300_000)
	for i := range tokens {
		tokens[i] = "token"
	}
	s := sample()
	s.KV = append(s.KV, w.KV{Key: "tokenizer.ggml.tokens", Value: w.Strings(tokens...)})
	s.Tensors = append(s.Tensors, w.Tensor{Name: "big", Dims: []uint64{1 << 20}, Type: 0, Data: make([]byte, 4<<20)})
	b := s.Bytes()
	cr := &countingReader{r: bytes.NewReader(b)}
	f, err := NewFile(cr, int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	if cr.calls != 3 || f.HeaderReads != 3 || cr.bytes >= len(b) {
		t.Errorf("%d reads of %d bytes for a %d-byte header in a %d-byte file", cr.calls, cr.bytes, f.DataOffset, len(b))
	}
	if v, _ := f.Lookup("tokenizer.ggml.tokens"); v.Len() != len(tokens) {
		t.Errorf("%d tokens", v.Len())
	}
}

func TestHostileCountsDoNotAllocate(t *testing.T) {
	// Counts just inside what the file could hold still cost no more than
	// the file: one array of many zero-length strings in a small file.
	s := sample()
	s.KV[0].Value = w.Raw(w.TypeArray, append([]byte{w.TypeString, 0, 0, 0}, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0))
	b := s.Bytes()
	if _, err := NewFile(bytes.NewReader(b), int64(len(b))); err == nil {
		t.Error("no error")
	}
	// A size claiming far more than the bytes there: the read fails.
	b = sample().Bytes()
	if _, err := NewFile(bytes.NewReader(b[:200]), 1<<40); err == nil {
		t.Error("no error for a short reader")
	}
}

func TestOpenAndRegistry(t *testing.T) {
	b := sample().Bytes()
	path := filepath.Join(t.TempDir(), "model.gguf")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Error(err)
	}
	tf, format, err := tensorfile.Open("blob", bytes.NewReader(b), int64(len(b)))
	if err != nil || format.Name() != Name || tf.NumTensors() != 3 {
		t.Fatalf("tensorfile.Open = %v, %v, %v", tf, format, err)
	}
	if fm, ok := tensorfile.ByFileName("x/model-Q4_K_M.gguf"); !ok || fm.Name() != Name {
		t.Errorf("ByFileName = %v", fm)
	}
	if _, _, err := tensorfile.Open("bad.gguf", bytes.NewReader([]byte("oops")), 4); err == nil || !strings.Contains(err.Error(), "gguf_bad_magic") {
		t.Errorf("damaged .gguf: %v", err)
	}
	if _, err := Open(filepath.Join(t.TempDir(), "missing.gguf")); err == nil {
		t.Error("Open of a missing file: no error")
	}
}

func TestTypes(t *testing.T) {
	tests := []struct {
		t     Type
		name  string
		block tensorfile.Block
	}{
		{TypeF32, "F32", tensorfile.Block{Elements: 1, Bytes: 4}},
		{TypeBF16, "BF16", tensorfile.Block{Elements: 1, Bytes: 2}},
		{TypeQ4_K, "Q4_K", tensorfile.Block{Elements: 256, Bytes: 144}},
		{TypeMXFP4, "MXFP4", tensorfile.Block{Elements: 32, Bytes: 17}},
		{TypeIQ2_XXS, "IQ2_XXS", tensorfile.Block{Elements: 256, Bytes: 66}},
		{Type(4), "Type(4)", tensorfile.Block{}},
	}
	for _, tt := range tests {
		if tt.t.String() != tt.name || tt.t.Block() != tt.block {
			t.Errorf("%d: %s %+v, want %s %+v", tt.t, tt.t, tt.t.Block(), tt.name, tt.block)
		}
	}
	if ValueType(9).String() != "arr" || ValueType(13).String() != "ValueType(13)" || ErrorKind(0).String() != "ErrorKind(0)" {
		t.Error("names")
	}
	if len(ErrorKinds()) != 11 {
		t.Errorf("%d kinds", len(ErrorKinds()))
	}
}

func FuzzNewFile(f *testing.F) {
	f.Add(sample().Bytes())
	s := sample()
	s.Version = 2
	f.Add(s.Bytes())
	f.Add([]byte("GGUF\x03\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := NewFile(bytes.NewReader(b), int64(len(b)))
		if (file == nil) == (err == nil) {
			t.Fatalf("NewFile = %v, %v", file, err)
		}
		if err != nil {
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v is not a *FormatError", err)
			}
			return
		}
		for i := range file.NumTensors() {
			ti := file.TensorInfo(i)
			if ti.Offset < file.DataOffset || ti.Offset+ti.Size > int64(len(b)) {
				t.Fatalf("tensor %q bytes [%d, %d) outside the file's %d", ti.Name, ti.Offset, ti.Offset+ti.Size, len(b))
			}
		}
		_ = file.Meta()
	})
}
