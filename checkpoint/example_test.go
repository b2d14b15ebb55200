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
