package checkpoint

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ckptcheck/ckptcheck/gguf"
	w "github.com/ckptcheck/ckptcheck/internal/ggufwrite"
)

// A .gguf file is one checkpoint, read through the tensorfile registry,
// whether given as the file or as its folder.
func TestOpenGGUF(t *testing.T) {
	dir := t.TempDir()
	f := w.File{KV: []w.KV{w.P("general.architecture", w.Str("qwen3"))},
		Tensors: []w.Tensor{{Name: "output_norm.weight", Dims: []uint64{8}, Type: uint32(gguf.TypeF32), Data: make([]byte, 32)}}}
	path := filepath.Join(dir, "model-Q8_0.gguf")
	if err := os.WriteFile(path, f.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, dir} {
		c, err := Open(context.Background(), p, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Shards) != 1 || c.Shards[0].Status != ShardOK || c.Shards[0].Format.Name() != gguf.Name || c.NumTensors() != 1 {
			t.Errorf("%s: %d shards, %+v", p, len(c.Shards), c.Shards[0])
		}
		if h, ok := c.Shards[0].Header.(*gguf.File); !ok || h.Architecture() != "qwen3" {
			t.Errorf("%s: header %T", p, c.Shards[0].Header)
		}
		c.Close()
	}
}
