package checkpoint_test

import (
	"fmt"

	"github.com/ckptcheck/ckptcheck/checkpoint"
)

// A hub-cache snapshot's files link to blobs named by their hashes: two
// files compare without reading them when their digests are of one kind.
func ExampleBlobDigest() {
	lfs := checkpoint.BlobDigest("../../blobs/9e3c7a1c2b1f0d4e5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f")
	small := checkpoint.BlobDigest("../../blobs/0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c")
	fmt.Println(lfs.Algo, small.Algo)
	fmt.Println(checkpoint.SameBytes(lfs, lfs))
	fmt.Println(checkpoint.SameBytes(lfs, small)) // different kinds of digest tell nothing
	// Output:
	// sha256 git-sha1
	// true true
	// false false
}

func ExampleTieDefaultOf() {
	for _, mt := range []string{"qwen3", "gemma", "gpt2"} {
		d, own := checkpoint.TieDefaultOf(mt)
		fmt.Println(mt, d.Tied, own)
	}
	// Output:
	// qwen3 false true
	// gemma true true
	// gpt2 true false
}

func ExampleParsePEFTConfig() {
	p, err := checkpoint.ParsePEFTConfig([]byte(`{"peft_type": "LORA", "base_model_name_or_path": "Qwen/Qwen3-0.6B", "r": 16}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(p.PEFTType, p.BaseModel, p.Rank)
	_, err = checkpoint.ParsePEFTConfig([]byte(`["LORA"]`))
	fmt.Println(err)
	// Output:
	// LORA Qwen/Qwen3-0.6B 16
	// a JSON an array, not an object
}

func ExampleParseIndex() {
	idx, err := checkpoint.ParseIndex([]byte(`{"metadata": {"total_size": 24},
		"weight_map": {"embed.weight": "model-00001-of-00002.safetensors", "lm_head.weight": "./model-00002-of-00002.safetensors"}}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(*idx.TotalSize, idx.ShardNames())
	shard, _ := idx.ShardOf("lm_head.weight")
	fmt.Println(shard)
	_, err = checkpoint.ParseIndex([]byte(`{"metadata": {}}`))
	fmt.Println(err)
	// Output:
	// 24 [model-00001-of-00002.safetensors model-00002-of-00002.safetensors]
	// model-00002-of-00002.safetensors
	// no weight_map object
}

// Index entries must be tensor files inside the checkpoint's folder.
func ExampleUnsafeName() {
	for _, name := range []string{"model-00001-of-00002.safetensors", "../secrets.safetensors", `C:\model.safetensors`, "weights.txt"} {
		fmt.Printf("%q %q\n", name, checkpoint.UnsafeName(name))
	}
	// Output:
	// "model-00001-of-00002.safetensors" ""
	// "../secrets.safetensors" "leaves the checkpoint directory"
	// "C:\\model.safetensors" "is an absolute path"
	// "weights.txt" "is not a .bin, .gguf, .pt, .pth or .safetensors file"
}

// Remote paths are told by their scheme, whether or not a source for it is
// linked in.
func ExampleIsRemote() {
	for _, p := range []string{"hf://Qwen/Qwen3-0.6B", "s3://bucket/ckpt", "https://host/model.safetensors", "Qwen/Qwen3-0.6B", "./model"} {
		fmt.Println(p, checkpoint.IsRemote(p))
	}
	// Output:
	// hf://Qwen/Qwen3-0.6B true
	// s3://bucket/ckpt true
	// https://host/model.safetensors true
	// Qwen/Qwen3-0.6B false
	// ./model false
}
