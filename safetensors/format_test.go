package safetensors

import (
	"bytes"
	"errors"
	"testing"

	"github.com/ckptcheck/ckptcheck/tensorfile"
)

func TestSniff(t *testing.T) {
	ok := raw("{"+t1+"}", 16)
	tests := []struct {
		name string
		b    []byte
		size int64
		want bool
	}{
		{"a file", ok, int64(len(ok)), true},
		{"leading whitespace", raw(" \n{"+t1+"}", 16), int64(len(ok) + 2), true},
		{"only the length read so far", ok[:8], int64(len(ok)), false},
		{"header past the end", lenPrefix(1000, "{}"), 10, false},
		{"header too large", lenPrefix(MaxHeaderSize+1, "{"), 1 << 40, false},
		{"not an object", raw(`["a"]`, 0), 13, false},
		{"LFS pointer", []byte("version https://git-lfs.github.com/spec/v1\n"), 44, false},
		{"tiny", []byte{2, 0, 0, 0, 0, 0, 0, 0, '{'}, 9, false},
		{"empty", nil, 0, false},
	}
	for _, tt := range tests {
		if got := (format{}).Sniff(tt.b[:min(len(tt.b), tensorfile.SniffLen)], tt.size); got != tt.want {
			t.Errorf("%s: Sniff = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestRegistered(t *testing.T) {
	f, ok := tensorfile.Lookup(Name)
	if !ok {
		t.Fatal("safetensors is not registered")
	}
	if by, ok := tensorfile.ByFileName("model-00001-of-00002.safetensors"); !ok || by.Name() != Name {
		t.Errorf("ByFileName = %v, %v", by, ok)
	}
	b := raw("{"+t1+"}", 16)
	file, err := f.Open(bytes.NewReader(b), int64(len(b)))
	if err != nil || file.NumTensors() != 1 || file.Meta() != nil {
		t.Fatalf("Open = %v, %v", file, err)
	}
	ti := file.TensorInfo(0)
	if ti.Name != "a" || ti.DType != F32 || ti.Offset != int64(len(b)-16) || ti.Size != 16 {
		t.Errorf("TensorInfo(0) = %+v", ti)
	}
	if err := file.Close(); err != nil {
		t.Error(err)
	}

	// A damaged file: the strict reader's error, and no half-valid File in
	// the interface (a nil *File would not compare equal to nil).
	bad := raw("{"+t1+"}", 15)
	file, err = f.Open(bytes.NewReader(bad), int64(len(bad)))
	var fe *FormatError
	if file != nil || !errors.As(err, &fe) || fe.Kind != MetadataIncompleteBuffer {
		t.Errorf("Open(truncated) = %v, %v", file, err)
	}
	_, _, err = tensorfile.Open("x.safetensors", bytes.NewReader([]byte("garbage!!")), 9)
	if !errors.As(err, &fe) || fe.Kind != HeaderTooLarge {
		t.Errorf("a .safetensors file of garbage: %v, want the reference's header_too_large", err)
	}
}
