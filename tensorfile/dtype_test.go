package tensorfile

import (
	"maps"
	"math"
	"slices"
	"testing"
)

func TestBytes(t *testing.T) {
	tests := []struct {
		d    DType
		n    uint64
		want uint64
	}{
		{F32, 3, 12},
		{BF16, 0, 0},
		{F4, 2, 1},
		{F4, 3, 1}, // rounds down: a block of F4 holds whole bytes
		{F6_E2M3, 4, 3},
		{F6_E3M2, 8, 6},
		{U64, 1 << 60, 1 << 63},
		{F64, math.MaxUint64, math.MaxUint64},    // saturates
		{F4, math.MaxUint64, math.MaxUint64 / 2}, // 4·n/8 still fits
		{DType(200), 5, 0},                       // no bits
		{F32, math.MaxUint64 / 4, (math.MaxUint64 / 4) * 4 / 1}, // just fits
	}
	for _, tt := range tests {
		if got := tt.d.Bytes(tt.n); got != tt.want {
			t.Errorf("%s.Bytes(%d) = %d, want %d", tt.d, tt.n, got, tt.want)
		}
	}
}

func TestBlocks(t *testing.T) {
	tests := []struct {
		name string
		got  Block
		want Block
	}{
		{"F32", F32.Block(), Block{1, 4}},
		{"BOOL", BOOL.Block(), Block{1, 1}},
		{"F4", F4.Block(), Block{2, 1}},
		{"F6_E2M3", F6_E2M3.Block(), Block{4, 3}},
		{"C64", C64.Block(), Block{1, 8}},
		{"invalid dtype", DType(99).Block(), Block{}},
		// ggml-common.h's static_asserts.
		{"Q4_0", Q4_0.Block(), Block{32, 18}},
		{"Q8_0", Q8_0.Block(), Block{32, 34}},
		{"Q2_K", Q2_K.Block(), Block{256, 84}},
		{"Q3_K", Q3_K.Block(), Block{256, 110}},
		{"Q4_K", Q4_K.Block(), Block{256, 144}},
		{"Q5_K", Q5_K.Block(), Block{256, 176}},
		{"Q6_K", Q6_K.Block(), Block{256, 210}},
		{"Q8_K", Q8_K.Block(), Block{256, 292}},
		{"IQ4_XS", IQ4_XS.Block(), Block{256, 136}},
		{"MXFP4", MXFP4.Block(), Block{32, 17}},
		{"invalid encoding", Encoding(0).Block(), Block{}},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: %+v, want %+v", tt.name, tt.got, tt.want)
		}
	}
	// Every dtype's block agrees with its bits.
	for _, d := range DTypes() {
		b := d.Block()
		if b.Bytes*8 != b.Elements*uint64(d.Bits()) || d.Bytes(b.Elements) != b.Bytes {
			t.Errorf("%s: block %+v disagrees with %d bits", d, b, d.Bits())
		}
	}
}

func TestBlockSize(t *testing.T) {
	tests := []struct {
		b    Block
		n    uint64
		want uint64
		ok   bool
	}{
		{Q4_K.Block(), 512, 288, true},
		{Q4_K.Block(), 500, 0, false}, // not whole blocks
		{Block{}, 0, 0, false},
		{Q8_0.Block(), math.MaxUint64 / 32 * 32, 0, false}, // overflows
		{F6_E2M3.Block(), 8, 6, true},
	}
	for _, tt := range tests {
		if got, ok := tt.b.Size(tt.n); got != tt.want || ok != tt.ok {
			t.Errorf("%+v.Size(%d) = %d, %v; want %d, %v", tt.b, tt.n, got, ok, tt.want, tt.ok)
		}
	}
}

func TestEncodingNames(t *testing.T) {
	for _, e := range Encodings() {
		b, _ := e.MarshalText()
		var back Encoding
		if err := back.UnmarshalText(b); err != nil || back != e {
			t.Errorf("%s: round trip gave %v, %v", e, back, err)
		}
	}
	var e Encoding
	if err := e.UnmarshalText([]byte("q4_k")); err == nil {
		t.Error("encoding names are case-sensitive")
	}
	if s := Encoding(200).String(); s != "Encoding(200)" {
		t.Errorf("String = %s", s)
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

// TestDTypes checks the dtype table against the reference's Dtype enum
// (safetensors/src/tensor.rs), written out here: every dtype it has, with
// its bit width, and no other.
func TestDTypes(t *testing.T) {
	bits := map[string]int{"BOOL": 8, "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8,
		"F8_E8M0": 8, "F8_E4M3FNUZ": 8, "F8_E5M2FNUZ": 8, "I16": 16, "U16": 16, "F16": 16, "BF16": 16, "I32": 32,
		"U32": 32, "F32": 32, "C64": 64, "F64": 64, "I64": 64, "U64": 64}
	var listed []string
	for _, d := range DTypes() {
		listed = append(listed, d.String())
	}
	if want := slices.Sorted(maps.Keys(bits)); !slices.Equal(slices.Sorted(slices.Values(listed)), want) {
		t.Errorf("DTypes() = %v, want the reference's %v", listed, want)
	}
	for name, want := range bits {
		d, ok := ParseDType(name)
		if !ok || d.Bits() != want || d.String() != name {
			t.Errorf("%s: parsed %v %v, bits %d, want %d", name, d, ok, d.Bits(), want)
		}
		// As JSON (reports), a dtype is its name, and reads back.
		text, err := d.MarshalText()
		var back DType
		if err != nil || string(text) != name || back.UnmarshalText(text) != nil || back != d {
			t.Errorf("%s: text %q, %v; read back as %v", name, text, err, back)
		}
	}
	var d DType
	if err := d.UnmarshalText([]byte("bf16")); err == nil {
		t.Error("UnmarshalText(bf16): header names are case-sensitive")
	}
	if _, ok := ParseDType("bf16"); ok {
		t.Error("dtype names are case-sensitive")
	}
}

func FuzzLookupDType(f *testing.F) {
	for _, s := range []string{"BF16", "torch.float16", "F8_E4M3", "", "TORCH.", "ﬀ"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if d, ok := ParseDType(s); ok {
			if d.String() != s {
				t.Fatalf("ParseDType(%q) = %s", s, d)
			}
			if l, ok := LookupDType(s); !ok || l != d {
				t.Fatalf("LookupDType(%q) = %v, %v; ParseDType says %s", s, l, ok, d)
			}
		}
		if d, ok := LookupDType(s); ok && !d.Valid() {
			t.Fatalf("LookupDType(%q) = invalid %d", s, d)
		}
	})
}

func FuzzIdentify(f *testing.F) {
	f.Add("model.fa", []byte("AAAA"), int64(4))
	f.Add("x.y/z", []byte("BBBB"), int64(-1))
	f.Fuzz(func(t *testing.T, name string, prefix []byte, size int64) {
		fm, err := Identify(name, prefix, size)
		if (fm == nil) == (err == nil) {
			t.Fatalf("Identify = %v, %v", fm, err)
		}
		if byName, ok := ByFileName(name); ok && fm.Name() != byName.Name() {
			t.Fatalf("the name says %s, Identify chose %v", byName.Name(), fm)
		}
	})
}
