// Package manifest records a checkpoint as it was and checks it later:
// a Manifest lists every file with its size and SHA-256 and every tensor
// with its dtype, shape and the xxh3-64 of its bytes (Build, Read,
// WriteJSON), and Compare judges a checkpoint against one, however it is
// sharded. CheckHashes (validate --hashes) recomputes the digests a hub
// cache names its blobs by.
//
// Both read whole files once, one file per worker (internal/filehash),
// and both can be shared out over machines by file (SelectFiles): the
// partial manifests merge into the whole one (MergeParts), and the
// partition reports of validate --hashes (NewHashesReport) merge with
// verify.Merge. Its judgements are verify's Findings; verify does not
// import it.
package manifest
