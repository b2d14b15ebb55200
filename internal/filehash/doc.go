// Package filehash reads whole files once, start to end, and computes
// their digests (SHA-256, git's blob SHA-1) and the xxh3-64 of byte ranges
// inside them (a shard's tensors) in the same pass: manifests, validate
// --hashes and the comparison of the files beside the weights use it.
//
// Each file is read by one worker in chunks small enough to stay in the
// core's cache while every digest of the file consumes them; workers take
// files, largest first, so that two shards keep two cores busy. Memory is
// one chunk per worker, whatever the files' sizes.
//
// It is the one read loop of the module over an io.ReaderAt (ReadFull);
// it imports nothing of the project but internal/xxh3, so every layer may
// use it.
package filehash
