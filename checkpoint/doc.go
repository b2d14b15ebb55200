// Package checkpoint opens Hugging Face checkpoints: the safetensors files
// a model is stored as, the *.safetensors.index.json that says which file
// holds each tensor, and the config.json beside them.
//
// A Checkpoint is what users point a tool at: a single .safetensors file, an
// index with its shards, a directory, or a repo id found in the local hub
// cache. Its files come from a Source (a local directory today; remote
// stores plug in as Sources whose files are io.ReaderAt values), so every
// check reads every source the same way. Only headers are read at Open.
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
