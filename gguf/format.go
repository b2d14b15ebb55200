package gguf

import (
	"io"
	"strings"

	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// The GGUF format registers itself with tensorfile: linking this package is
// what makes .gguf files readable through the registry.
func init() { tensorfile.Register(format{}) }

// Name is the format's name in the tensorfile registry.
const Name = "gguf"

var extensions = []string{".gguf"}

type format struct{}

func (format) Name() string { return Name }

// Extensions returns a fresh slice: the registry's callers may keep it.
func (format) Extensions() []string { return append([]string(nil), extensions...) }

// Sniff accepts what starts with the magic and a little-endian version.
func (format) Sniff(prefix []byte, size int64) bool {
	return len(prefix) >= 8 && size >= 24 && string(prefix[:4]) == Magic
}

func (format) Open(r io.ReaderAt, size int64) (tensorfile.File, error) {
	f, err := NewFile(r, size)
	if err != nil {
		return nil, err // an untyped nil File, never a nil *File in it
	}
	return f, nil
}

// metaStringLen is where Meta cuts a long string value.
const metaStringLen = 256

// A *File is a tensorfile.File.
var _ tensorfile.File = (*File)(nil)

// NumTensors is len(f.Tensors).
func (f *File) NumTensors() int { return len(f.Tensors) }

// TensorInfo returns tensor i in the format-neutral form: a plain GGML type
// as its dtype, a block type as its Encoding (with DType U8), the shape
// row-major, the byte range absolute in the file.
func (f *File) TensorInfo(i int) tensorfile.TensorInfo {
	t := &f.Tensors[i]
	info := tensorfile.TensorInfo{Name: t.Name, Shape: t.shape, Offset: f.DataOffset + int64(t.Offset), Size: int64(t.Size)}
	if e, ok := t.Type.Encoding(); ok {
		info.DType, info.Encoding = tensorfile.U8, e
	} else {
		info.DType, _ = t.Type.DType()
	}
	return info
}

// Meta is the metadata as strings, for listing: each value as Value.String
// writes it, arrays summarised, a string as itself but cut after
// metaStringLen bytes (a chat template is kilobytes). Lookup has the values.
func (f *File) Meta() map[string]string {
	f.metaOnce.Do(func() {
		f.meta = make(map[string]string, len(f.KV))
		for _, kv := range f.KV {
			if s, ok := kv.Value.Str(); ok {
				if len(s) > metaStringLen {
					s = strings.ToValidUTF8(s[:metaStringLen], "") + "… (" + itoa(uint64(len(s))) + " bytes)"
				}
				f.meta[kv.Key] = s
			} else {
				f.meta[kv.Key] = kv.Value.String()
			}
		}
	})
	return f.meta
}
