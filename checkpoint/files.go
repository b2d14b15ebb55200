package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// A FileInfo describes one file of a checkpoint's Source.
type FileInfo struct {
	// Name is the file's name in the source, slash-separated.
	Name string
	// Size is the file's length in bytes.
	Size int64
	// Digest is a digest of the file's bytes that the source knows without
	// reading them (a hub-cache blob name, the Hub's LFS oid, an ETag); the
	// zero Digest when it knows none.
	Digest Digest
}

// A DigestAlgo names how a Digest was computed.
type DigestAlgo string

// The digests sources know.
const (
	// SHA256 is the SHA-256 of the bytes: a Git LFS oid, the name of an LFS
	// file's blob in the hub cache, the Hub's X-Linked-Etag.
	SHA256 DigestAlgo = "sha256"
	// GitSHA1 is the git blob id, SHA-1 of "blob <size>\x00" and the bytes:
	// the name of a small (non-LFS) file's blob in the hub cache, the Hub's
	// ETag for it.
	GitSHA1 DigestAlgo = "git-sha1"
	// ETag is an opaque entity tag (S3's MD5 or multipart tag): equal ETags
	// from one source mean equal bytes, different ones prove nothing.
	ETag DigestAlgo = "etag"
)

// A Digest is a digest of a file's bytes: the algorithm and its value, in
// lowercase hex for SHA256 and GitSHA1, as given for an ETag.
type Digest struct {
	Algo  DigestAlgo
	Value string
}

// IsZero reports whether d is no digest.
func (d Digest) IsZero() bool { return d.Algo == "" }

// String is "algo:value", or "" for no digest.
func (d Digest) String() string {
	if d.IsZero() {
		return ""
	}
	return string(d.Algo) + ":" + d.Value
}

// Verifiable reports whether the digest can be recomputed from the bytes:
// SHA256 and GitSHA1 can, an ETag cannot.
func (d Digest) Verifiable() bool { return d.Algo == SHA256 || d.Algo == GitSHA1 }

// SameBytes says what two digests prove about two files: same is whether
// they hold the same bytes, known whether the digests can tell. Digests of
// different algorithms tell nothing; different ETags tell nothing either
// (one content has many multipart ETags).
func SameBytes(a, b Digest) (same, known bool) {
	if a.IsZero() || b.IsZero() || a.Algo != b.Algo {
		return false, false
	}
	if a.Algo == ETag {
		return a.Value == b.Value, a.Value == b.Value
	}
	return a.Value == b.Value, true
}

// A Stater is a Source that can describe a file without opening it (a
// remote source answers with a HEAD request). Sources without it are asked
// by opening the file.
type Stater interface {
	// Stat describes the file. A file that does not exist is an error
	// satisfying errors.Is(err, fs.ErrNotExist).
	Stat(ctx context.Context, name string) (FileInfo, error)
}

// A Digester is a Source that knows digests of its files without reading
// them: the hub cache names blobs by their hash, the Hub's API gives an LFS
// file's SHA-256, S3 an ETag. Comparing two checkpoints' files by digest
// first means only the files that differ are read.
type Digester interface {
	// Digest returns what the source knows of the file's digest: the zero
	// Digest and no error when it knows none.
	Digest(ctx context.Context, name string) (Digest, error)
}

// Stat describes a file of src: through its Stat and Digest when it has
// them, else by opening the file for its size.
func Stat(ctx context.Context, src Source, name string) (FileInfo, error) {
	var fi FileInfo
	if s, ok := src.(Stater); ok {
		var err error
		if fi, err = s.Stat(ctx, name); err != nil {
			return FileInfo{}, err
		}
	} else {
		f, err := src.Open(ctx, name)
		if err != nil {
			return FileInfo{}, err
		}
		fi = FileInfo{Name: name, Size: f.Size()}
		f.Close()
	}
	fi.Name = name
	if d, ok := src.(Digester); ok && fi.Digest.IsZero() {
		dg, err := d.Digest(ctx, name)
		if err != nil {
			return FileInfo{}, err
		}
		fi.Digest = dg
	}
	return fi, nil
}

// Stat describes a regular file of the directory, with its digest when it
// is a link into a hub cache's blobs.
func (d Dir) Stat(ctx context.Context, name string) (FileInfo, error) {
	st, err := os.Stat(d.Path(name))
	if err != nil {
		return FileInfo{}, err
	}
	if !st.Mode().IsRegular() {
		return FileInfo{}, &fs.PathError{Op: "stat", Path: d.Path(name), Err: errors.New("not a regular file")}
	}
	dg, err := d.Digest(ctx, name)
	if err != nil {
		return FileInfo{}, err
	}
	return FileInfo{Name: name, Size: st.Size(), Digest: dg}, nil
}

// Digest returns the digest a hub cache's layout gives a file: a snapshot's
// files are symlinks to blobs/<hash>, the SHA-256 of an LFS file or the git
// blob SHA-1 of a small one. Anything else has no known digest.
func (d Dir) Digest(_ context.Context, name string) (Digest, error) {
	target, err := os.Readlink(d.Path(name))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return Digest{}, err
		}
		return Digest{}, nil // not a symlink
	}
	return BlobDigest(target), nil
}

// BlobDigest reads the digest in a hub-cache blob path ".../blobs/<hash>":
// 64 lowercase hex digits are a SHA-256, 40 a git blob SHA-1. Any other
// path has none.
func BlobDigest(target string) Digest {
	target = filepath.ToSlash(target)
	if path.Base(path.Dir(target)) != "blobs" {
		return Digest{}
	}
	h := path.Base(target)
	if !isLowerHex(h) {
		return Digest{}
	}
	switch len(h) {
	case 64:
		return Digest{Algo: SHA256, Value: h}
	case 40:
		return Digest{Algo: GitSHA1, Value: h}
	}
	return Digest{}
}

func isLowerHex(s string) bool {
	for i := range len(s) {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return s != ""
}

// A FileKind says what a file beside the weights is for.
type FileKind string

// The kinds of files beside the weights.
const (
	KindConfig       FileKind = "config"        // config.json
	KindGeneration   FileKind = "generation"    // generation_config.json
	KindTokenizer    FileKind = "tokenizer"     // tokenizer.json, tokenizer_config.json, vocabularies, ...
	KindChatTemplate FileKind = "chat_template" // chat_template.jinja, chat_template.json
	KindProcessor    FileKind = "processor"     // preprocessor_config.json, processor_config.json
)

// companionNames are the files beside the weights that transformers reads
// to load a model and generate with it, by name.
var companionNames = sync.OnceValue(func() map[string]FileKind {
	return map[string]FileKind{
		"config.json":                    KindConfig,
		"generation_config.json":         KindGeneration,
		"tokenizer.json":                 KindTokenizer,
		"tokenizer_config.json":          KindTokenizer,
		"special_tokens_map.json":        KindTokenizer,
		"added_tokens.json":              KindTokenizer,
		"tokenizer.model":                KindTokenizer,
		"vocab.json":                     KindTokenizer,
		"merges.txt":                     KindTokenizer,
		"vocab.txt":                      KindTokenizer,
		"spiece.model":                   KindTokenizer,
		"sentencepiece.bpe.model":        KindTokenizer,
		"chat_template.jinja":            KindChatTemplate,
		"chat_template.json":             KindChatTemplate,
		"preprocessor_config.json":       KindProcessor,
		"processor_config.json":          KindProcessor,
		"video_preprocessor_config.json": KindProcessor,
	}
})

// CompanionKind says what a file beside the weights is for, by its name:
// "" for a file that is not one (a shard, an index, a README).
func CompanionKind(name string) FileKind {
	if k, ok := companionNames()[name]; ok {
		return k
	}
	if strings.HasSuffix(name, ".tiktoken") && !strings.Contains(name, "/") {
		return KindTokenizer
	}
	return ""
}

// CompanionNames lists the fixed names CompanionKind knows, sorted: what a
// source that cannot list is probed for.
func CompanionNames() []string {
	names := make([]string, 0, len(companionNames()))
	for n := range companionNames() {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Companions lists the files beside the weights (config, tokenizer,
// generation config, chat template, processor config) in the checkpoint's
// folder, sorted by name, with sizes and the digests the source knows. A
// source that cannot list is probed for the names CompanionNames gives.
func (c *Checkpoint) Companions(ctx context.Context) ([]FileInfo, error) {
	var names []string
	entries, err := c.Source.List(ctx)
	switch {
	case errors.Is(err, ErrNotListable):
		names = CompanionNames()
	case err != nil:
		return nil, pathError(c.Source.Path("."), err)
	default:
		for _, e := range entries {
			if !e.Dangling && CompanionKind(e.Name) != "" {
				names = append(names, e.Name)
			}
		}
		slices.Sort(names)
	}
	// Each look is a round trip on a remote source, and a source that
	// cannot list is probed for every name: look at them all at once.
	infos := make([]FileInfo, len(names))
	errs := make([]error, len(names))
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for i, n := range names {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if errs[i] = ctx.Err(); errs[i] == nil {
				infos[i], errs[i] = Stat(ctx, c.Source, n)
			}
		})
	}
	wg.Wait()
	var out []FileInfo
	for i, n := range names {
		switch err := errs[i]; {
		case errors.Is(err, fs.ErrNotExist):
			continue // probed and absent, or gone since the listing
		case err != nil && ctx.Err() != nil:
			return nil, ctx.Err()
		case err != nil:
			return nil, pathError(c.Source.Path(n), err)
		}
		out = append(out, infos[i])
	}
	return out, nil
}

// ErrTooLarge is wrapped by ReadFile when a file is larger than the caller
// allows: a finding for the caller to report, not an I/O failure.
var ErrTooLarge = errTooLarge

// ReadFile reads a file of the checkpoint's source whole, refusing one over
// limit bytes before reading it (the error then wraps ErrTooLarge). It is
// for the small files beside the weights; tensor data is read through the
// shards.
func (c *Checkpoint) ReadFile(ctx context.Context, name string, limit int64) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b, err := readSmall(ctx, c.Source, name, limit)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, pathError(c.Source.Path(name), err)
	}
	return b, err
}

// Files lists the files a checkpoint consists of, sorted by name, with
// sizes and the digests the source knows: its shards (those present), its
// index, and the files beside the weights. Other files in the folder
// (a README, other variants, shards the index does not name) are not part
// of it.
func (c *Checkpoint) Files(ctx context.Context) ([]FileInfo, error) {
	companions, err := c.Companions(ctx)
	if err != nil {
		return nil, err
	}
	seen := make(map[string]bool)
	out := make([]FileInfo, 0, len(c.Shards)+len(companions)+1)
	add := func(name string) error {
		if seen[name] {
			return nil
		}
		seen[name] = true
		fi, err := Stat(ctx, c.Source, name)
		if err != nil {
			return pathError(c.Source.Path(name), err)
		}
		out = append(out, fi)
		return nil
	}
	for _, s := range c.Shards {
		if !s.Status.Absent() {
			if err := add(s.Name); err != nil {
				return nil, err
			}
		}
	}
	if c.Index != nil {
		if err := add(c.Index.Name); err != nil {
			return nil, err
		}
	}
	for _, fi := range companions {
		if !seen[fi.Name] {
			seen[fi.Name] = true
			out = append(out, fi)
		}
	}
	slices.SortFunc(out, func(a, b FileInfo) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Entries lists every file at the root of the checkpoint's source, sorted
// by name, with sizes and known digests: what a hub-cache snapshot holds.
// Dangling symlinks are left out (validation reports missing shards).
func (c *Checkpoint) Entries(ctx context.Context) ([]FileInfo, error) {
	entries, err := c.Source.List(ctx)
	if err != nil {
		if errors.Is(err, ErrNotListable) {
			return nil, fmt.Errorf("%s: %w", c.Source.Path("."), err)
		}
		return nil, pathError(c.Source.Path("."), err)
	}
	var out []FileInfo
	for _, e := range entries {
		if e.Dangling {
			continue
		}
		fi, err := Stat(ctx, c.Source, e.Name)
		if err != nil {
			return nil, pathError(c.Source.Path(e.Name), err)
		}
		out = append(out, fi)
	}
	slices.SortFunc(out, func(a, b FileInfo) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}
