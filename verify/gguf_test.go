package verify

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ckptcheck/ckptcheck/gguf"
	w "github.com/ckptcheck/ckptcheck/internal/ggufwrite"
	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// tinyGGUF is a llama-shaped GGUF file: an F32 norm, a Q8_0 and a Q4_K
// weight.
func tinyGGUF() w.File {
	return w.File{
		KV: []w.KV{w.P("general.architecture", w.Str("llama")), w.P("llama.block_count", w.U32(1)),
			w.P("tokenizer.ggml.tokens", w.Strings("<s>", "</s>"))},
		Tensors: []w.Tensor{
			{Name: "blk.0.attn_norm.weight", Dims: []uint64{256}, Type: uint32(gguf.TypeF32), Data: make([]byte, 256*4)},
			{Name: "blk.0.attn_q.weight", Dims: []uint64{256, 2}, Type: uint32(gguf.TypeQ8_0), Data: make([]byte, 2*8*34)},
			{Name: "blk.0.ffn_up.weight", Dims: []uint64{256, 3}, Type: uint32(gguf.TypeQ4_K), Data: make([]byte, 3*144)},
		},
	}
}

func writeGGUF(t *testing.T, f w.File) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "model.gguf")
	must(t, os.WriteFile(path, f.Bytes(), 0o644))
	return path
}

func TestGGUFCodesCoverEveryKind(t *testing.T) {
	for _, k := range gguf.ErrorKinds() {
		if d, ok := DocOf(GGUFFormatCode(k)); !ok || d.Severity != Error {
			t.Errorf("gguf error kind %s has no error code documented", k)
		}
	}
}

func TestValidateGGUF(t *testing.T) {
	if fs := validatePath(t, writeGGUF(t, tinyGGUF())); len(fs) != 0 {
		t.Errorf("a valid GGUF file: %v", fs)
	}
	tests := []struct {
		name string
		edit func(*w.File)
		cut  int // bytes cut off the end
		code Code
		key  string
	}{
		{name: "offset", edit: func(f *w.File) { f.Tensors[2].Offset, f.Tensors[2].SetOffset = 0, true }, code: CodeGGUFBadOffset, key: "blk.0.ffn_up.weight"},
		{name: "truncated", cut: 200, code: CodeGGUFTensorPastEnd, key: "blk.0.ffn_up.weight"},
		{name: "duplicate", edit: func(f *w.File) { f.Tensors[1].Name = f.Tensors[0].Name }, code: CodeGGUFDuplicate, key: "blk.0.attn_norm.weight"},
		{name: "version", edit: func(f *w.File) { f.Version = 7 }, code: CodeGGUFBadVersion},
		{name: "alignment", edit: func(f *w.File) { f.KV = append(f.KV, w.P(gguf.AlignmentKey, w.U32(3))) }, code: CodeGGUFBadAlignment},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := tinyGGUF()
			if tt.edit != nil {
				tt.edit(&f)
			}
			b := f.Bytes()
			path := filepath.Join(t.TempDir(), "model.gguf")
			must(t, os.WriteFile(path, b[:len(b)-tt.cut], 0o644))
			fs := validatePath(t, path)
			if len(fs) != 1 || fs[0].Code != tt.code || fs[0].Key != tt.key || fs[0].Severity != Error || fs[0].File != path {
				t.Errorf("findings %+v, want one %s on %q", fs, tt.code, tt.key)
			}
		})
	}
}

func TestInspectGGUF(t *testing.T) {
	ins := Inspect(openCheckpoint(t, writeGGUF(t, tinyGGUF())), nil, false)
	if ins.Totals.Tensors != 3 || ins.Totals.Parameters != 256+512+768 || ins.Totals.Files != 1 {
		t.Errorf("totals %+v", ins.Totals)
	}
	if ins.Totals.Metadata["general.architecture"] != "llama" || ins.Totals.Metadata["tokenizer.ggml.tokens"] != `["<s>", "</s>"] (2 str)` {
		t.Errorf("metadata %v", ins.Totals.Metadata)
	}
	for typ, want := range map[string]DTypeTotals{"F32": {1, 256, 1024}, "Q8_0": {1, 512, 544}, "Q4_K": {1, 768, 432}} {
		if got := ins.Totals.ByDType[typ]; got == nil || *got != want {
			t.Errorf("%s: %+v, want %+v", typ, got, want)
		}
	}
	row := ins.Tensors[2]
	if row.Name != "blk.0.ffn_up.weight" || row.Encoding != tensorfile.Q4_K.String() || row.Type() != "Q4_K" || tensorfile.FormatShape(row.Shape) != "[3, 256]" {
		t.Errorf("row %+v", row)
	}
}

func TestValidateGGUFMetadata(t *testing.T) {
	f32 := func(name string, dims ...uint64) w.Tensor {
		n := uint64(4)
		for _, d := range dims {
			n *= d
		}
		return w.Tensor{Name: name, Dims: dims, Type: uint32(gguf.TypeF32), Data: make([]byte, n)}
	}
	file := func(kv ...w.KV) w.File {
		base := []w.KV{w.P("general.architecture", w.Str("qwen3")), w.P("qwen3.block_count", w.U32(1)),
			w.P("qwen3.embedding_length", w.U32(64)), w.P("qwen3.attention.head_count", w.U32(4)), w.P("qwen3.attention.head_count_kv", w.U32(2))}
		for _, o := range kv { // replace or add
			i := slices.IndexFunc(base, func(b w.KV) bool { return b.Key == o.Key })
			if i < 0 {
				base = append(base, o)
			} else {
				base[i] = o
			}
		}
		return w.File{KV: base, Tensors: []w.Tensor{
			f32("token_embd.weight", 64, 10), // GGML order: [embedding, vocab]
			f32("blk.0.attn_q.weight", 64, 64), f32("blk.0.attn_k.weight", 64, 32), f32("blk.0.attn_v.weight", 64, 32),
		}}
	}
	tests := []struct {
		name string
		kv   []w.KV
		keys []string
	}{
		{"consistent", nil, nil},
		{"block count", []w.KV{w.P("qwen3.block_count", w.U32(2))}, []string{""}},
		{"kv heads", []w.KV{w.P("qwen3.attention.head_count_kv", w.U32(4))}, []string{"blk.0.attn_k.weight", "blk.0.attn_v.weight"}},
		{"embedding", []w.KV{w.P("qwen3.embedding_length", w.U32(32))},
			[]string{"token_embd.weight", "blk.0.attn_q.weight", "blk.0.attn_k.weight", "blk.0.attn_v.weight"}},
		{"explicit key length", []w.KV{w.P("qwen3.attention.key_length", w.U32(16))}, nil},
		{"unchecked architecture", []w.KV{w.P("general.architecture", w.Str("phi3")), w.P("phi3.attention.head_count", w.U32(3))}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := validatePath(t, writeGGUF(t, file(tt.kv...)))
			var keys []string
			for _, f := range fs {
				if f.Code != CodeGGUFMetadataMismatch {
					t.Errorf("finding %+v", f)
				}
				keys = append(keys, f.Key)
			}
			if !slices.Equal(keys, tt.keys) {
				t.Errorf("findings on %q, want %q: %v", keys, tt.keys, fs)
			}
		})
	}
}
