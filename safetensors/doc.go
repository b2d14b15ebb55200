// Package safetensors reads and writes the safetensors file format and opens
// checkpoints made of several such files.
//
// The reader follows the reference implementation (the Rust safetensors
// crate, 0.8) rule for rule: a file it rejects is rejected here with the same
// error kind (see ErrorKind), and a file it accepts opens here too. Only the
// 8-byte length and the JSON header are read when a file is opened; tensor
// bytes are read on demand through File.Section. Nothing read from the file
// sizes an allocation beyond the header itself, which is at most
// MaxHeaderSize bytes and never more than the file holds.
//
// A Checkpoint is what users point a tool at: a single .safetensors file, a
// *.safetensors.index.json with its shards, a directory, or a Hugging Face
// repo id found in the local hub cache. Problems with its files are recorded
// on it (Shard.Err, Index.Err) rather than returned, so that a validator can
// report all of them.
package safetensors
