// Package remote reads checkpoints where they are: https:// and http://
// URLs, and hf://org/name[@revision][/folder][/file] repositories on the
// Hugging Face Hub. Importing it registers those schemes with
// checkpoint.RegisterScheme, so checkpoint.Open reads them; package
// checkpoint itself never names this one.
//
// Each remote path becomes a checkpoint.Source whose files are
// io.ReaderAt values doing ranged requests: retried with backoff (5xx,
// 429 with its Retry-After, dropped connections), resumed where a broken
// answer stopped, pinned to the first answer's ETag (If-Match) or, on the
// Hub, to the commit the revision resolved to, so that a file replaced
// during the run is an error rather than a mix of two versions. Reads that
// continue where the last ones stopped switch to read-ahead in 8 MiB
// chunks, from a bounded number of buffers owned by the source (96 MiB)
// and shared by its files; a request, its retries included, ends within
// RemoteOptions.Timeout. Close the checkpoint (which closes its source) to
// release the files opened ahead and the connections. Opening
// reads only headers: a first request asks for the 8-byte header length
// and 100,000 bytes of header, a second one the rest of a longer header.
//
// Everything comes in through checkpoint.RemoteOptions: the Hub token,
// its endpoint, offline mode and the HTTP transport. This package reads
// no credentials, endpoints or modes from the environment; the hub cache
// directory (checkpoint.HubCacheDir) is the one default it takes from it.
// The token goes only to the endpoint's exact origin, never along a
// redirect to a CDN.
//
// The same machinery serves other object stores (package s3 under this
// one): a store implements Object (one ranged GET), embeds Base in its
// Source (opening ahead, recording versions, the source's bounds, Close),
// opens its files with Base.OpenFile, and ends its Opener with Locate.
package remote
