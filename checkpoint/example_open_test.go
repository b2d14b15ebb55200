package checkpoint_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ckptcheck/ckptcheck/checkpoint"
	"github.com/ckptcheck/ckptcheck/safetensors"
	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// writeShard writes a safetensors file of one U8 tensor.
func writeShard(path, tensor string, data []byte) error {
	fh, err := os.Create(path)
	if err != nil {
		return err
	}
	w := safetensors.NewWriter(fh)
	if err := w.Add(tensor, safetensors.U8, []uint64{uint64(len(data))}, data); err != nil {
		fh.Close()
		return err
	}
	if err := w.Close(); err != nil {
		fh.Close()
		return err
	}
	return fh.Close()
}

// A directory with an index over two shards, one of them missing: Open
// succeeds, and the missing shard is a fact on the Checkpoint.
func ExampleOpen() {
	dir, err := os.MkdirTemp("", "ckpt")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	if err := writeShard(filepath.Join(dir, "model-00001-of-00002.safetensors"), "embed.weight", []byte{1, 2, 3, 4}); err != nil {
		fmt.Println(err)
		return
	}
	index := `{"weight_map": {"embed.weight": "model-00001-of-00002.safetensors", "lm_head.weight": "model-00002-of-00002.safetensors"}}`
	if err := os.WriteFile(filepath.Join(dir, "model.safetensors.index.json"), []byte(index), 0o644); err != nil {
		fmt.Println(err)
		return
	}

	c, err := checkpoint.Open(context.Background(), dir, checkpoint.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	fmt.Println(c.Index.Name, c.IndexErr)
	for _, s := range c.Shards {
		switch s.Status {
		case checkpoint.ShardOK:
			fmt.Println(s.Name, s.Status)
			for _, t := range tensorfile.Tensors(s.File) {
				fmt.Println(" ", t.Name, t.DType, t.Shape)
			}
		default:
			fmt.Printf("%s %s: %s\n", s.Name, s.Status, s.Reason)
		}
	}
	// Output:
	// model.safetensors.index.json <nil>
	// model-00001-of-00002.safetensors ok
	//   embed.weight U8 [4]
	// model-00002-of-00002.safetensors missing: the index names it, but there is no such file
}
