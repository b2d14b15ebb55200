package remote_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ckptcheck/ckptcheck/checkpoint"
	_ "github.com/ckptcheck/ckptcheck/checkpoint/remote"
	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/internal/remotetest"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// Linked in, package remote makes checkpoint.Open read https:// URLs.
// Opening a checkpoint served over HTTP reads its index, config.json and
// the shards' headers by ranged requests; tensor bytes are read later, on
// demand, through each shard's io.ReaderAt.
func Example() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	fixture.WriteSharded(dir, fixture.Tiny.Tensors(safetensors.BF16), 3, fixture.Tiny.Config("bfloat16"))
	srv, _ := remotetest.NewServer(dir) // on 127.0.0.1
	defer srv.Close()

	c, err := checkpoint.Open(context.Background(), srv.URL+"/model.safetensors.index.json", checkpoint.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	fmt.Println(c.Remote.Kind, len(c.Shards), "shards,", c.NumTensors(), "tensors; listed:", c.Remote.Listed)
	for _, v := range c.Remote.Files {
		fmt.Println(v.Name, v.Size, v.ETag != "")
	}
	fmt.Println(filepath.Base(c.Shards[0].Path))
	// Output:
	// http 3 shards, 46 tensors; listed: false
	// config.json 305 true
	// model-00001-of-00003.safetensors 30656 true
	// model-00002-of-00003.safetensors 24376 true
	// model-00003-of-00003.safetensors 32328 true
	// model.safetensors.index.json 3792 true
	// model-00001-of-00003.safetensors
}
