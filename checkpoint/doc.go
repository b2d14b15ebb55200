// Package checkpoint opens Hugging Face checkpoints: the tensor files a
// model is stored as, the *.safetensors.index.json that says which file
// holds each tensor, and the config.json beside them.
//
// Which files hold tensors is the tensorfile registry's to say: a file is
// read as the registered format its name claims (IsTensorFile;
// safetensors is the one there is), and an index's entries must be files
// of a registered format (UnsafeName). How a checkpoint spreads over
// several files is a Layout: Hugging Face's index over shards (HFIndex)
// today. What opening a shard found is its ShardStatus; its File is the
// format-neutral tensorfile.File, and Shard.Safetensors gives the
// safetensors specifics.
//
// A Checkpoint is what users point a tool at: a single .safetensors file, an
// index with its shards, a directory, a repo id found in the local hub
// cache, or a remote path: an https:// URL, hf://org/name[@revision] on the
// Hugging Face Hub, s3://bucket/prefix. Its files come from a Source (a local
// directory, or a remote store whose files are io.ReaderAt values doing
// ranged reads with retries), so every check reads every source the same
// way. Only headers are read at Open.
//
// Remote sources live in packages of their own and register an Opener for
// their URL scheme (RegisterScheme), as image formats register with package
// image: checkpoint/remote serves https://, http:// and hf://,
// checkpoint/remote/s3 serves s3:// through the AWS SDK. This package names
// neither, so a program that imports only checkpoint reads local paths and
// links no network or AWS code; one that also imports a source (as the
// ckptcheck command does, with blank imports) reads its scheme too. A
// remote path whose source is not linked is an error saying which package
// to import. RemoteOptions carry everything remote sources are told (the
// Hub token and endpoint, offline mode, the HTTP transport, timeouts): the
// library reads none of them from the environment; only the hub cache's
// directory (HubCacheDir) comes from HF_HUB_CACHE or HF_HOME.
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
