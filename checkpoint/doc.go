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
// Open returns an error only when it cannot do its job (a path that is
// missing or unreadable). What it finds in the files — an index naming a
// shard that does not exist, a header that breaks the format, a config
// field of the wrong type — is recorded on the Checkpoint as facts; package
// verify turns them into findings. This package judges nothing.
package checkpoint
