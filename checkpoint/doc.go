// Package checkpoint opens Hugging Face checkpoints: the safetensors files
// a model is stored as, the *.safetensors.index.json that says which file
// holds each tensor, and the config.json beside them.
//
// A Checkpoint is what users point a tool at: a single .safetensors file, an
// index with its shards, a directory, a repo id found in the local hub
// cache, or a remote path: an https:// URL, hf://org/name[@revision] on the
// Hugging Face Hub, s3://bucket/prefix. Its files come from a Source (a local
// directory, or a remote store whose files are io.ReaderAt values doing
// ranged reads with retries), so every check reads every source the same
// way. Only headers are read at Open: for a remote file, one ranged request
// for the first 100,008 bytes, and one more for a longer header.
//
// The files beside the weights (config, tokenizer, generation config, chat
// template: Companions) are listed with their sizes and, where the source
// knows it without reading (a hub-cache blob's name; a remote store's LFS
// oid or ETag: the optional Stater and Digester interfaces), a Digest, so
// that two checkpoints' files compare without downloading the equal ones.
//
// Open returns an error only when it cannot do its job (a path that is
// missing or unreadable). What it finds in the files — an index naming a
// shard that does not exist, a header that breaks the format, a config
// field of the wrong type — is recorded on the Checkpoint as facts; package
// verify turns them into findings. This package judges nothing.
package checkpoint
