package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/ckptcheck/ckptcheck/safetensors"
)

// maxJSONFile bounds index.json and config.json reads. The largest published
// indexes (600B-parameter models, ~100k tensors) are about 10 MB.
const maxJSONFile = 256 << 20

// A Checkpoint is a set of safetensors files read as one model: a single
// file, or the shards an index names, with the config.json beside them.
// Only headers are read when it is opened; tensor bytes are read on demand
// through each Shard's File.
type Checkpoint struct {
	// Path is the path the checkpoint was opened from, as given.
	Path string
	// Source is where its files are read from; names are relative to it.
	Source Source
	// Hub is set when Path was a repo id resolved in the local hub cache,
	// or an hf:// path resolved on the Hub.
	Hub *HubRef
	// Remote is set when the path was remote (https://, hf://, s3://): the
	// resolved name and each file's version, or for an hf:// path read
	// offline, the commit found in the hub cache.
	Remote *Remote
	// Variant is the variant read ("fp16" for model.fp16.safetensors), ""
	// for the plain model.safetensors; Variants lists the others present,
	// which are separate checkpoints.
	Variant  string
	Variants []string
	// Index is the *.safetensors.index.json, nil when there is none.
	Index *Index
	// Config is config.json beside the files, nil when there is none.
	Config *Config
	// PEFT is adapter_config.json beside the files, nil when there is none:
	// the checkpoint is then a PEFT adapter of another model.
	PEFT *PEFTConfig
	// Shards are the files of the checkpoint, sorted by name: those the index
	// names, or without an index every *.safetensors file (or the one file).
	Shards []*Shard
	// Unreferenced lists *.safetensors files beside the index that the
	// index does not name; they are not opened.
	Unreferenced []string
	// PartOf is set when a single file was opened that an index beside it
	// names: the file is one shard of a larger checkpoint.
	PartOf *Index

	files []File
	// ownSource says Close closes Source (when it is an io.Closer): Open
	// made it, for a remote path.
	ownSource bool
}

// A Shard is one file of a checkpoint.
type Shard struct {
	// Name is the file's name in the checkpoint (as the index names it,
	// cleaned); Path is how reports name it.
	Name, Path string
	// File is the open file, readable: nil when the shard is missing,
	// refused, or its header or layout is invalid. A file whose only fault
	// is trailing bytes is readable, with Err set.
	File *safetensors.File
	// Err is the file's format error, a *safetensors.FormatError.
	Err error
	// Missing says why the shard is absent ("" when present): the index
	// names a file that does not exist, or a symlink points at nothing.
	Missing string
	// Unsafe says why the index's name for it was never opened.
	Unsafe string
	// Version is the opened file's version when its source tells it (see
	// Versioned): "mtime …" for a local file.
	Version string
}

// Header is the shard's header as parsed, even when its layout is invalid;
// nil when the header itself did not parse or the shard was not opened.
func (s *Shard) Header() *safetensors.File {
	if s.File != nil {
		return s.File
	}
	var fe *safetensors.FormatError
	if errors.As(s.Err, &fe) {
		return fe.File
	}
	return nil
}

// Options say which checkpoint to open at a path.
type Options struct {
	// Variant selects model.<variant>.safetensors files in a directory
	// holding several variants; "" is the plain model.safetensors.
	Variant string
	// AnyVariant makes Variant apply only where the directory holds
	// variants: a plain checkpoint is read as it is. A diff uses it, since
	// the published side seldom has the export's variants.
	AnyVariant bool
	// Remote configures remote paths (https://, hf://, s3://).
	Remote RemoteOptions
}

// Open opens the checkpoint at path: a .safetensors file (of any name), a
// *.safetensors.index.json, a directory, a Hugging Face repo id
// "org/name[@revision]" found in the local hub cache, or a remote path
// (https://, http://, hf://, s3://, or any scheme registered with
// RegisterScheme; see IsRemote). A path that exists always wins over a
// repo id.
//
// It returns an error when there is nothing to check, or when a file it
// needs cannot be read (missing path, permissions, an I/O error, a FIFO or
// device, a symlink loop): ckptcheck could not do its job. Problems with
// the files' contents, and files the index names that do not exist, are
// recorded in the Checkpoint for the checks to report.
func Open(ctx context.Context, path string, opt Options) (*Checkpoint, error) {
	if IsRemote(path) {
		return openRemote(ctx, path, opt)
	}
	c := &Checkpoint{Path: path}
	resolved := path
	st, err := os.Stat(path)
	if err != nil && errors.Is(err, fs.ErrNotExist) && LooksLikeRepoID(path) {
		if _, lerr := os.Lstat(path); lerr != nil { // a dangling symlink is a path, not a repo id
			if resolved, c.Hub, err = ResolveHub(path); err != nil {
				return nil, err
			}
			st, err = os.Stat(resolved)
		}
	}
	if err != nil {
		return nil, pathError(path, err)
	}
	switch {
	case st.IsDir():
		c.Source = Dir(resolved)
		return c.opened(c.open(ctx, "", opt))
	case !st.Mode().IsRegular():
		return nil, pathError(path, errors.New(nonRegular(st.Mode())))
	}
	c.Source = Dir(filepath.Dir(resolved))
	return c.opened(c.open(ctx, filepath.Base(resolved), opt))
}

// opened is c, or nil with the error, which leaves nothing open.
func (c *Checkpoint) opened(err error) (*Checkpoint, error) {
	if err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// OpenSource opens the checkpoint named name in src: "" for the source's
// root read as a directory, a *.index.json for an index and its shards,
// else one safetensors file. It is Open for sources other than local paths.
func OpenSource(ctx context.Context, src Source, name string, opt Options) (*Checkpoint, error) {
	c := &Checkpoint{Path: src.Path(name), Source: src}
	if name == "" {
		c.Path = src.Path(".")
	}
	return c.opened(c.open(ctx, name, opt))
}

// open reads the checkpoint's config, index and shard headers: name is ""
// for the source's root, an index, or a single file.
func (c *Checkpoint) open(ctx context.Context, name string, opt Options) error {
	var indexName string
	var names []string
	var err error
	isDir := name == ""
	switch {
	case isDir:
		if indexName, names, err = c.chooseFiles(ctx, opt.Variant, opt.AnyVariant); err != nil {
			return err
		}
	case strings.HasSuffix(name, ".index.json"):
		indexName = name
	default:
		names = []string{name}
	}
	if err := c.readConfig(ctx); err != nil {
		return err
	}
	if err := c.readPEFTConfig(ctx); err != nil {
		return err
	}
	if indexName == "" {
		if len(names) == 1 && !isDir {
			c.PartOf = c.indexNaming(ctx, names[0])
		}
		return c.openShards(ctx, names, isDir)
	}
	// The folder's shards are opened while the index parses: on large MoE
	// checkpoints the two take about as long, and the index nearly always
	// names the folder's files.
	_, inDir, listErr := c.listShards(ctx, c.Variant)
	if listErr != nil && !errors.Is(listErr, ErrNotListable) {
		return listErr
	}
	early := &Checkpoint{Source: c.Source}
	earlyDone := make(chan error, 1)
	go func() { earlyDone <- early.openShards(ctx, inDir, true) }()
	b, err := readSmall(ctx, c.Source, indexName, maxJSONFile)
	if err == nil || tooLarge(err) {
		c.Index = ParseIndex(b)
		if err != nil {
			c.Index = &Index{Err: err}
		}
	}
	earlyErr := <-earlyDone
	if err != nil && !tooLarge(err) {
		early.Close()
		return pathError(c.Source.Path(indexName), err)
	}
	c.Index.Name, c.Index.Path = indexName, c.Source.Path(indexName)
	if c.Index.Err != nil {
		// Fall back to the folder's files of this variant.
		if earlyErr != nil {
			return earlyErr
		}
		c.Shards, c.files = early.Shards, early.files
		return nil
	}
	named := c.Index.ShardNames()
	for _, n := range inDir {
		if _, ok := slices.BinarySearch(named, n); !ok {
			c.Unreferenced = append(c.Unreferenced, n)
		}
	}
	if earlyErr != nil {
		// A file the index may not even name could not be opened: open
		// what the index names, as if nothing had been opened early.
		early.Close()
		return c.openShards(ctx, named, false)
	}
	opened := make(map[string]int, len(early.Shards))
	for i, s := range early.Shards {
		opened[s.Name] = i
	}
	var rest []string
	for _, n := range named {
		if _, ok := opened[n]; !ok {
			rest = append(rest, n)
		}
	}
	late := &Checkpoint{Source: c.Source, Index: c.Index}
	if err := late.openShards(ctx, rest, false); err != nil {
		early.Close()
		return err
	}
	c.Shards, c.files = make([]*Shard, len(named)), make([]File, len(named))
	k := 0
	for i, n := range named {
		if j, ok := opened[n]; ok {
			c.Shards[i], c.files[i] = early.Shards[j], early.files[j]
			early.files[j] = nil
			// Found through the index after all: a missing file is one
			// the index names.
			if c.Shards[i].Missing != "" {
				c.Shards[i].Missing = c.missingReason(n, false)
			}
			continue
		}
		c.Shards[i], c.files[i] = late.Shards[k], late.files[k]
		k++
	}
	early.Close() // the unreferenced files, not opened for checking
	return nil
}

// variantShard and variantIndex match transformers' variant file names:
// model.fp16.safetensors, model.fp16-00001-of-00002.safetensors,
// model.safetensors.index.fp16.json.
var (
	variantShard = regexp.MustCompile(`^(model|diffusion_pytorch_model)\.([A-Za-z0-9_]+)(-\d+-of-\d+)?\.safetensors$`)
	variantIndex = regexp.MustCompile(`^(model|diffusion_pytorch_model)\.safetensors\.index\.([A-Za-z0-9_]+)\.json$`)
)

func variantOf(name string) string {
	if m := variantShard.FindStringSubmatch(name); m != nil {
		return m[2]
	}
	if m := variantIndex.FindStringSubmatch(name); m != nil {
		return m[2]
	}
	return ""
}

// listShards lists the *.safetensors files of a variant in the source, and
// the variants present.
func (c *Checkpoint) listShards(ctx context.Context, variant string) (variants, names []string, err error) {
	entries, err := c.Source.List(ctx)
	if err != nil {
		if errors.Is(err, ErrNotListable) {
			return nil, nil, err
		}
		return nil, nil, pathError(c.Source.Path("."), err)
	}
	seen := map[string]bool{}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name, ".safetensors") {
			continue
		}
		v := variantOf(e.Name)
		if !seen[v] {
			seen[v] = true
			variants = append(variants, v)
		}
		if v == variant {
			names = append(names, e.Name)
		}
	}
	slices.Sort(variants)
	slices.Sort(names)
	return variants, names, nil
}

// chooseFiles picks, in a directory, the index and shards of the variant
// asked for (the plain one by default, or the only one there is).
func (c *Checkpoint) chooseFiles(ctx context.Context, variant string, anyVariant bool) (index string, names []string, err error) {
	entries, err := c.Source.List(ctx)
	if err != nil {
		return "", nil, pathError(c.Source.Path("."), err)
	}
	indexes := map[string]string{} // variant -> index name
	var otherIndexes []string
	for _, e := range entries {
		switch {
		case variantIndex.MatchString(e.Name):
			indexes[variantOf(e.Name)] = e.Name
		case e.Name == "model.safetensors.index.json" || e.Name == "diffusion_pytorch_model.safetensors.index.json":
			indexes[""] = e.Name
		case strings.HasSuffix(e.Name, ".safetensors.index.json"):
			otherIndexes = append(otherIndexes, e.Name)
		}
	}
	variants, _, err := c.listShards(ctx, variant)
	if err != nil {
		return "", nil, err
	}
	for v := range indexes {
		if !slices.Contains(variants, v) {
			variants = append(variants, v)
		}
	}
	slices.Sort(variants)
	if variant == "" && !slices.Contains(variants, "") && len(variants) == 1 {
		variant = variants[0] // only a variant: that is the checkpoint
	}
	if anyVariant && len(variants) == 1 {
		variant = variants[0] // no choice to make
	}
	if variant != "" && !slices.Contains(variants, variant) {
		return "", nil, fmt.Errorf("%s: no %s variant (variants here: %s)", c.Path, variant, listOrNone(VariantNames(variants)))
	}
	c.Variant = variant
	for _, v := range variants {
		if v != variant {
			c.Variants = append(c.Variants, v)
		}
	}
	if idx, ok := indexes[variant]; ok {
		return idx, nil, nil
	}
	if variant == "" && len(otherIndexes) > 0 {
		slices.Sort(otherIndexes)
		return otherIndexes[0], nil, nil
	}
	_, names, err = c.listShards(ctx, variant)
	if err != nil {
		return "", nil, err
	}
	if len(names) == 0 {
		return "", nil, fmt.Errorf("%s: no *.safetensors files and no index", c.Path)
	}
	return "", names, nil
}

// VariantNames writes variants for messages: "" is "(plain)".
func VariantNames(vs []string) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v
		if v == "" {
			out[i] = "(plain)"
		}
	}
	return out
}

// indexNaming returns the index beside a single file that names it, if any.
func (c *Checkpoint) indexNaming(ctx context.Context, name string) *Index {
	entries, err := c.Source.List(ctx)
	if err != nil {
		return nil
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name, ".index.json") || !strings.Contains(e.Name, ".safetensors.index") {
			continue
		}
		b, err := readSmall(ctx, c.Source, e.Name, maxJSONFile)
		if err != nil {
			continue
		}
		idx := ParseIndex(b)
		if idx.Err == nil && slices.Contains(idx.ShardNames(), name) {
			idx.Name, idx.Path = e.Name, c.Source.Path(e.Name)
			return idx
		}
	}
	return nil
}

func (c *Checkpoint) readConfig(ctx context.Context) error {
	b, err := readSmall(ctx, c.Source, "config.json", maxJSONFile)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil && tooLarge(err):
		c.Config = &Config{Err: err}
	case err != nil:
		return pathError(c.Source.Path("config.json"), err)
	default:
		c.Config = ParseConfig(b)
	}
	c.Config.Name, c.Config.Path = "config.json", c.Source.Path("config.json")
	return nil
}

// errTooLarge marks a JSON file over maxJSONFile: a finding, not trouble.
var errTooLarge = errors.New("too large")

func tooLarge(err error) bool { return errors.Is(err, errTooLarge) }

// openShards opens every shard's header, a few at a time: header reads are
// small and dominated by I/O latency on cold or remote storage. listed says
// the names came from listing the source (a dangling symlink is then a
// missing shard found in a directory, not one an index names).
func (c *Checkpoint) openShards(ctx context.Context, names []string, listed bool) error {
	c.Shards = make([]*Shard, len(names))
	c.files = make([]File, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	sem := make(chan struct{}, c.openConcurrency())
	for i, name := range names {
		s := &Shard{Name: name, Path: c.Source.Path(name)}
		c.Shards[i] = s
		if reason := UnsafeName(name); reason != "" && c.Index != nil {
			s.Unsafe, s.Path = reason, name
			continue
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			f, err := c.Source.Open(ctx, name)
			switch {
			case errors.Is(err, fs.ErrNotExist):
				s.Missing = c.missingReason(name, listed)
				return
			case err != nil:
				errs[i] = pathError(s.Path, err)
				return
			}
			c.files[i] = f
			if v, ok := f.(Versioned); ok {
				s.Version = v.Version()
			}
			s.File, s.Err = safetensors.NewFile(f, f.Size())
			var fe *safetensors.FormatError
			if errors.As(s.Err, &fe) && fe.Trailing() {
				s.File = fe.File
			} else if s.Err != nil && !errors.As(s.Err, &fe) {
				errs[i] = pathError(s.Path, s.Err) // an I/O error reading the header
			}
		}()
	}
	wg.Wait()
	err := errors.Join(errs...)
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		c.Close()
	}
	return err
}

func (c *Checkpoint) missingReason(name string, listed bool) string {
	dangling := false
	if _, err := os.Lstat(c.Source.Path(name)); err == nil {
		dangling = true
	}
	switch {
	case dangling && inHubCache(c.Source.Path(name)):
		return "a symlink in the hub cache that points at no blob: an interrupted download (re-run the download)"
	case dangling:
		return "a symlink that points at nothing"
	case listed:
		return "the file disappeared while it was opened"
	}
	return "the index names it, but there is no such file"
}

// pathError is one line naming the path and the cause.
func pathError(path string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", path, pe.Err)
	}
	if strings.HasPrefix(err.Error(), path) {
		return err
	}
	return fmt.Errorf("%s: %w", path, err)
}

func nonRegular(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO, not a regular file"
	case m&fs.ModeDevice != 0:
		return "a device, not a regular file"
	}
	return "not a regular file"
}

// Close closes every file and, for a remote path, the source Open made
// for it (its files opened ahead, its connections). A Source given to
// OpenSource stays open: it is the caller's.
func (c *Checkpoint) Close() error {
	var errs []error
	for i, f := range c.files {
		if f != nil {
			errs = append(errs, f.Close())
			c.files[i] = nil
		}
	}
	if cl, ok := c.Source.(io.Closer); ok && c.ownSource {
		errs = append(errs, cl.Close())
		c.ownSource = false
	}
	return errors.Join(errs...)
}

// Unchanged reports an error when a file changed since it was opened, as a
// trainer still saving asynchronously would.
func (c *Checkpoint) Unchanged() error {
	for _, f := range c.files {
		if f != nil {
			if err := f.Unchanged(); err != nil {
				return err
			}
		}
	}
	return nil
}

// NumTensors counts the tensors of every shard whose header parsed.
func (c *Checkpoint) NumTensors() int {
	n := 0
	for _, s := range c.Shards {
		if h := s.Header(); h != nil {
			n += len(h.Tensors)
		}
	}
	return n
}

// Tensor finds a readable tensor in the first shard that has it.
func (c *Checkpoint) Tensor(name string) *safetensors.Tensor {
	for _, s := range c.Shards {
		if s.File != nil {
			if t := s.File.Tensor(name); t != nil {
				return t
			}
		}
	}
	return nil
}
