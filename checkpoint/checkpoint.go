package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/ckptcheck/ckptcheck/safetensors"
)

// maxJSONFile bounds index.json and config.json reads. The largest published
// indexes (600B-parameter models, ~100k tensors) are about 10 MB.
const maxJSONFile = 256 << 20

// MaxShards bounds the files of one checkpoint: the largest published ones
// have a few hundred shards. An index naming more, or a folder without an
// index holding more *.safetensors files, is an error, not 100,000 opens.
const MaxShards = 4096

// maxEarlyOpens bounds the files of a folder opened before its index has
// said which it names (see open): a listing of more waits for the index,
// so that the files opened are the ones it names.
const maxEarlyOpens = 512

// A Checkpoint is a set of tensor files read as one model: a single file,
// or the shards an index names, with the config.json beside them. Each
// file is read as the registered format its name says (see IsTensorFile);
// a file given by a name no format claims is read as safetensors.
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
	// Index is the index file (model.safetensors.index.json), nil when
	// there is none. When it is no usable index, IndexErr says why, Index
	// holds only its Name and Path, and the shards are the tensor files
	// beside it.
	Index    *Index
	IndexErr error
	// Config is config.json beside the files, nil when there is none. When
	// it is not a JSON object (or too large), ConfigErr says why and Config
	// holds only its Name and Path.
	Config    *Config
	ConfigErr error
	// PEFT is adapter_config.json beside the files, nil when there is none:
	// the checkpoint is then a PEFT adapter of another model. PEFTErr is
	// to it what ConfigErr is to Config.
	PEFT    *PEFTConfig
	PEFTErr error
	// Shards are the files of the checkpoint, sorted by name: those the index
	// names, or without an index every tensor file (or the one file).
	Shards []*Shard
	// Unreferenced lists tensor files beside the index that the index does
	// not name; they are not opened.
	Unreferenced []string
	// Superseded lists weight files and indexes of another format in a
	// folder that holds safetensors weights (pytorch_model.bin beside
	// model.safetensors): as in transformers, the safetensors ones are read
	// and these are not.
	Superseded []string
	// PartOf is set when a single file was opened that an index beside it
	// names: the file is one shard of a larger checkpoint.
	PartOf *Index

	files []File
	// ownSource says Close closes Source (when it is an io.Closer): Open
	// made it, for a remote path.
	ownSource bool
}

// Options say which checkpoint to open at a path.
type Options struct {
	// Variant selects model.<variant>.safetensors files in a directory
	// holding several variants; "" is the plain model.safetensors. In a
	// folder of GGUF files of several quantizations it names one by its
	// quantization tag (Q8_0, any case), stem or file name.
	Variant string
	// AnyVariant makes Variant apply only where the directory holds
	// variants: a plain checkpoint is read as it is. A diff uses it, since
	// the published side seldom has the export's variants.
	AnyVariant bool
	// Remote configures remote paths (https://, hf://, s3://).
	Remote RemoteOptions
}

// Open opens the checkpoint at path: a tensor file (a .safetensors file;
// one of any name no registered format claims is read as safetensors), an
// index (*.safetensors.index.json, see Layout), a directory, a Hugging Face repo id
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
// root read as a directory, an index (a *.index.json, see Layout) for the
// index and its shards, else one tensor file. It is Open for sources other than local paths.
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
	case IsIndex(name):
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
		if err := c.tooManyShards(len(names), "*.safetensors files and no index"); err != nil {
			return err
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
	inDir = ofIndexedFormat(inDir, indexName)
	early := &Checkpoint{Source: c.Source}
	earlyDone := make(chan error, 1)
	if len(inDir) <= maxEarlyOpens {
		go func() { earlyDone <- early.openShards(ctx, inDir, true) }()
	} else {
		earlyDone <- errNotOpenedEarly
	}
	b, err := readSmall(ctx, c.Source, indexName, maxJSONFile)
	switch {
	case err == nil:
		c.Index, c.IndexErr = layoutOf(indexName).ParseIndex(b)
	case tooLarge(err):
		c.IndexErr = err
	}
	if c.IndexErr != nil {
		c.Index = &Index{}
	}
	earlyErr := <-earlyDone
	if err != nil && !tooLarge(err) {
		early.Close()
		return pathError(c.Source.Path(indexName), err)
	}
	c.Index.Name, c.Index.Path = indexName, c.Source.Path(indexName)
	if c.IndexErr != nil {
		// Fall back to the folder's files of this variant.
		if errors.Is(earlyErr, errNotOpenedEarly) {
			if err := c.tooManyShards(len(inDir), "*.safetensors files and an index that cannot be read"); err != nil {
				return err
			}
			earlyErr = early.openShards(ctx, inDir, true)
		}
		if earlyErr != nil {
			return earlyErr
		}
		c.Shards, c.files = early.Shards, early.files
		return nil
	}
	named := c.Index.ShardNames()
	if err := c.tooManyShards(len(named), "shards named by "+indexName); err != nil {
		early.Close()
		return err
	}
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
			if s := c.Shards[i]; s.Status == ShardMissing || s.Status == ShardDangling {
				s.Status, s.Reason = c.missingReason(n, false)
			}
			continue
		}
		c.Shards[i], c.files[i] = late.Shards[k], late.files[k]
		k++
	}
	early.Close() // the unreferenced files, not opened for checking
	return nil
}

// errNotOpenedEarly says a folder had too many files to open them before
// its index was read.
var errNotOpenedEarly = errors.New("not opened before the index")

// tooManyShards refuses a checkpoint of more than MaxShards files.
func (c *Checkpoint) tooManyShards(n int, what string) error {
	if n <= MaxShards {
		return nil
	}
	return fmt.Errorf("%s: %d %s, more than the %d shards ckptcheck opens", c.Path, n, what, MaxShards)
}

// indexNaming returns the index beside a single file that names it, if any.
func (c *Checkpoint) indexNaming(ctx context.Context, name string) *Index {
	entries, err := c.Source.List(ctx)
	if err != nil {
		return nil
	}
	for _, l := range layouts {
		byVariant, others := l.Indexes(entryNames(entries))
		plain, ok := byVariant[""]
		if ok {
			others = append(others, plain)
		}
		slices.Sort(others)
		for _, n := range others {
			b, err := readSmall(ctx, c.Source, n, maxJSONFile)
			if err != nil {
				continue
			}
			idx, err := l.ParseIndex(b)
			if err == nil && slices.Contains(idx.ShardNames(), name) {
				idx.Name, idx.Path = n, c.Source.Path(n)
				return idx
			}
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
		c.ConfigErr = err
	case err != nil:
		return pathError(c.Source.Path("config.json"), err)
	default:
		c.Config, c.ConfigErr = ParseConfig(b)
	}
	if c.ConfigErr != nil {
		c.Config = &Config{}
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
			s.Status, s.Reason, s.Path = ShardUnsafe, reason, name
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
				s.Status, s.Reason = c.missingReason(name, listed)
				return
			case err != nil:
				errs[i] = pathError(s.Path, err)
				return
			}
			c.files[i] = f
			if v, ok := f.(Versioned); ok {
				s.Version = v.Version()
			}
			if err := s.readHeader(f, f.Size()); err != nil {
				errs[i] = pathError(s.Path, err) // an I/O error reading the header
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

// missingReason says why a file that could not be opened is not there.
func (c *Checkpoint) missingReason(name string, listed bool) (ShardStatus, string) {
	dangling := false
	if _, err := os.Lstat(c.Source.Path(name)); err == nil {
		dangling = true
	}
	switch {
	case dangling && inHubCache(c.Source.Path(name)):
		return ShardDangling, "a symlink in the hub cache that points at no blob: an interrupted download (re-run the download)"
	case dangling:
		return ShardDangling, "a symlink that points at nothing"
	case listed:
		return ShardMissing, "the file disappeared while it was opened"
	}
	return ShardMissing, "the index names it, but there is no such file"
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
		if s.Header != nil {
			n += s.Header.NumTensors()
		}
	}
	return n
}

// Tensor finds a readable safetensors tensor in the first shard that has
// it.
func (c *Checkpoint) Tensor(name string) *safetensors.Tensor {
	for _, s := range c.Shards {
		if f, ok := s.File.(*safetensors.File); ok {
			if t := f.Tensor(name); t != nil {
				return t
			}
		}
	}
	return nil
}
