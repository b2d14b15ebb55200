package safetensors

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
)

// maxJSONFile bounds index.json and config.json reads. The largest published
// indexes (600B-parameter models, ~100k tensors) are about 10 MB.
const maxJSONFile = 256 << 20

// A Checkpoint is a set of safetensors files read as one model: a single
// file, or the shards an index names, with the config.json beside them.
type Checkpoint struct {
	// Path is the path the checkpoint was opened from, as resolved (for a
	// Hugging Face repo id, the snapshot directory).
	Path string
	// Dir is the directory that holds the shards.
	Dir string
	// Index is the *.safetensors.index.json, nil when there is none.
	Index *Index
	// Config is config.json from Dir, nil when there is none.
	Config *Config
	// Shards are the files of the checkpoint, sorted by name: those the index
	// names, or without an index every *.safetensors in Dir (or the one file).
	Shards []*Shard
	// Unreferenced lists *.safetensors files in Dir that the index does not name.
	Unreferenced []string
}

// A Shard is one file of a checkpoint.
type Shard struct {
	Name string // as the index names it, or the file's base name
	Path string
	// File is the opened file; nil when it could not be opened or its header
	// did not parse.
	File *File
	// Err is why the shard could not be opened or is invalid: a *FormatError
	// (the file, or IndexUnsafePath / IndexMissingShard) or an I/O error.
	// File may be non-nil along with a layout error.
	Err error
}

// Index is a parsed *.safetensors.index.json.
type Index struct {
	Path string
	// TotalSize is metadata.total_size, nil when absent.
	TotalSize *uint64
	// WeightMap maps tensor names to shard file names.
	WeightMap map[string]string
	// Err is an IndexInvalid *FormatError when the file is not a usable index;
	// the checkpoint then falls back to the *.safetensors files in its folder.
	Err error
}

// Config is the part of a model's config.json that checkpoints are checked
// against. Fields absent from the file are zero.
type Config struct {
	Path              string
	ModelType         string
	VocabSize         uint64
	HiddenSize        uint64
	NumHiddenLayers   uint64
	NumAttentionHeads uint64
	NumKeyValueHeads  uint64
	TieWordEmbeddings *bool
	// DType is "torch_dtype", or "dtype" as newer transformers write it.
	DType string
	// Quantized is set when the config has a quantization_config: stored
	// dtypes then differ from DType on purpose.
	Quantized bool
	// Ints holds every non-negative integer field, from text_config too
	// (top-level fields win): what adapter rules may compute with.
	Ints map[string]uint64
	// Err is set when config.json exists but is not a JSON object.
	Err error
}

// OpenCheckpoint opens the checkpoint at path: a .safetensors file, a
// *.safetensors.index.json, a directory, or a Hugging Face repo id
// "org/name[@revision]" found in the local hub cache. It returns an error
// only when there is nothing to check (the path is missing or unreadable);
// problems with the files themselves are recorded in the Checkpoint.
func OpenCheckpoint(path string) (*Checkpoint, error) {
	resolved, err := resolve(path)
	if err != nil {
		return nil, err
	}
	st, err := os.Stat(resolved)
	if err != nil {
		return nil, err
	}
	c := &Checkpoint{Path: resolved}
	var indexPath string
	switch {
	case st.IsDir():
		c.Dir = resolved
		indexPath, err = findIndex(resolved)
		if err != nil {
			return nil, err
		}
	case strings.HasSuffix(resolved, ".index.json"):
		c.Dir, indexPath = filepath.Dir(resolved), resolved
	default:
		c.Dir = filepath.Dir(resolved)
	}
	c.Config = readConfig(filepath.Join(c.Dir, "config.json"))

	if indexPath == "" {
		names := []string{filepath.Base(resolved)}
		if st.IsDir() {
			if names, err = globShards(c.Dir); err != nil {
				return nil, err
			}
			if len(names) == 0 {
				return nil, fmt.Errorf("%s: no *.safetensors files and no index", resolved)
			}
		}
		c.Shards = openShards(c.Dir, names)
		return c, nil
	}

	// Read the headers of the folder's shards while the index parses: on
	// large MoE checkpoints the two take about as long.
	inDir, err := globShards(c.Dir)
	if err != nil {
		return nil, err
	}
	done := make(chan []*Shard, 1)
	go func() { done <- openShards(c.Dir, inDir) }()
	c.Index = readIndex(indexPath)
	opened := <-done
	if c.Index.Err != nil {
		c.Shards = opened // fall back to the folder's files
		return c, nil
	}
	names := c.Index.shardNames()
	byName := make(map[string]*Shard, len(opened))
	for _, s := range opened {
		byName[s.Name] = s
	}
	var rest []string
	for _, n := range names {
		if byName[n] == nil {
			rest = append(rest, n)
		}
	}
	for _, s := range openShards(c.Dir, rest) {
		byName[s.Name] = s
	}
	referenced := make(map[string]bool, len(names))
	for _, n := range names {
		c.Shards = append(c.Shards, byName[n])
		referenced[filepath.Clean(n)] = true
	}
	for _, s := range opened {
		if !referenced[s.Name] {
			c.Unreferenced = append(c.Unreferenced, s.Name)
			if s.File != nil {
				s.File.Close()
			}
		}
	}
	return c, nil
}

// Close closes every shard.
func (c *Checkpoint) Close() error {
	var errs []error
	for _, s := range c.Shards {
		if s.File != nil {
			errs = append(errs, s.File.Close())
		}
	}
	return errors.Join(errs...)
}

// NumTensors counts the tensors of every shard that opened.
func (c *Checkpoint) NumTensors() int {
	n := 0
	for _, s := range c.Shards {
		if s.File != nil {
			n += len(s.File.Tensors)
		}
	}
	return n
}

// Tensor finds a tensor in the first shard that has it.
func (c *Checkpoint) Tensor(name string) (TensorInfo, bool) {
	for _, s := range c.Shards {
		if s.File != nil {
			if t, ok := s.File.Tensor(name); ok {
				return t, true
			}
		}
	}
	return TensorInfo{}, false
}

func findIndex(dir string) (string, error) {
	if p := filepath.Join(dir, "model.safetensors.index.json"); fileExists(p) {
		return p, nil
	}
	matches, err := filepath.Glob(filepath.Join(globEscape(dir), "*.safetensors.index.json"))
	if err != nil || len(matches) == 0 {
		return "", err
	}
	slices.Sort(matches)
	return matches[0], nil
}

func globShards(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".safetensors") && !e.IsDir() {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

func globEscape(s string) string {
	r := strings.NewReplacer(`*`, `\*`, `?`, `\?`, `[`, `\[`, `\`, `\\`)
	return r.Replace(s)
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// openShards opens every shard's header, a few at a time: header reads are
// small and dominated by I/O latency on cold or remote storage.
func openShards(dir string, names []string) []*Shard {
	shards := make([]*Shard, len(names))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4*runtime.GOMAXPROCS(0))
	for i, name := range names {
		s := &Shard{Name: name, Path: filepath.Join(dir, name)}
		shards[i] = s
		if reason := unsafeShardName(name); reason != "" {
			s.Path = ""
			s.Err = &FormatError{Kind: IndexUnsafePath, Offset: -1, Msg: fmt.Sprintf("shard name %q %s; not opened", name, reason)}
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			s.File, s.Err = Open(s.Path)
			if errors.Is(s.Err, os.ErrNotExist) {
				s.Err = &FormatError{Kind: IndexMissingShard, Offset: -1, Msg: fmt.Sprintf("shard %q does not exist", name)}
			}
		}()
	}
	wg.Wait()
	return shards
}

// unsafeShardName says why an index's shard name must not be opened, or "".
func unsafeShardName(name string) string {
	switch {
	case name == "":
		return "is empty"
	case filepath.IsAbs(name) || strings.HasPrefix(name, "/") || strings.HasPrefix(name, `\`):
		return "is an absolute path"
	case !filepath.IsLocal(name) || slices.Contains(strings.FieldsFunc(name, func(r rune) bool { return r == '/' || r == '\\' }), ".."):
		return "leaves the checkpoint directory"
	case strings.ContainsRune(name, 0):
		return "contains a NUL byte"
	case !strings.HasSuffix(name, ".safetensors"):
		return "is not a .safetensors file"
	}
	return ""
}

func readJSONFile(path string) ([]byte, error) {
	if st, err := os.Stat(path); err != nil {
		return nil, err
	} else if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() > maxJSONFile {
		return nil, fmt.Errorf("larger than %d bytes", maxJSONFile)
	}
	// Sized by the file's length (bounded above), not grown by doubling.
	b := make([]byte, 0, st.Size()+1)
	for {
		n, err := f.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return nil, err
		}
		if len(b) == cap(b) {
			if len(b) > maxJSONFile {
				return nil, fmt.Errorf("larger than %d bytes", maxJSONFile)
			}
			b = append(b, 0)[:len(b)]
		}
	}
}

func readIndex(path string) *Index {
	idx := &Index{Path: path}
	invalid := func(format string, args ...any) *Index {
		idx.Err = &FormatError{Kind: IndexInvalid, Offset: -1, Msg: fmt.Sprintf(format, args...)}
		idx.WeightMap = nil
		return idx
	}
	b, err := readJSONFile(path)
	if err != nil {
		return invalid("%v", err)
	}
	return parseIndex(idx, b)
}

// parseIndex fills idx from the index file's bytes.
func parseIndex(idx *Index, b []byte) *Index {
	invalid := func(format string, args ...any) *Index {
		idx.Err = &FormatError{Kind: IndexInvalid, Offset: -1, Msg: fmt.Sprintf(format, args...)}
		idx.WeightMap = nil
		return idx
	}
	wm, total, err := parseIndexJSON(b)
	var fe *FormatError
	if errors.As(err, &fe) {
		return invalid("not a JSON index: %s (at byte %d)", fe.Msg, fe.Offset)
	}
	if err != nil {
		return invalid("%v", err)
	}
	idx.WeightMap, idx.TotalSize = wm, total
	return idx
}

func (idx *Index) shardNames() []string {
	seen := make(map[string]bool)
	var names []string
	for _, f := range idx.WeightMap {
		if !seen[f] {
			seen[f] = true
			names = append(names, f)
		}
	}
	slices.Sort(names)
	return names
}

func readConfig(path string) *Config {
	b, err := readJSONFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	c := &Config{Path: path}
	if err != nil {
		c.Err = err
		return c
	}
	return parseConfig(c, b)
}

// parseConfig fills c from config.json's bytes.
func parseConfig(c *Config, b []byte) *Config {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		c.Err = fmt.Errorf("not a JSON object: %v", err)
		return c
	}
	// Multimodal configs nest the language model's fields in text_config.
	var text map[string]json.RawMessage
	_ = json.Unmarshal(raw["text_config"], &text)
	get := func(key string, dst any) {
		if v, ok := raw[key]; ok && json.Unmarshal(v, dst) == nil {
			return
		}
		if v, ok := text[key]; ok {
			_ = json.Unmarshal(v, dst)
		}
	}
	get("model_type", &c.ModelType)
	get("vocab_size", &c.VocabSize)
	get("hidden_size", &c.HiddenSize)
	get("num_hidden_layers", &c.NumHiddenLayers)
	get("num_attention_heads", &c.NumAttentionHeads)
	get("num_key_value_heads", &c.NumKeyValueHeads)
	get("tie_word_embeddings", &c.TieWordEmbeddings)
	get("torch_dtype", &c.DType)
	if c.DType == "" {
		get("dtype", &c.DType)
	}
	_, c.Quantized = raw["quantization_config"]
	c.Ints = make(map[string]uint64)
	for _, fields := range []map[string]json.RawMessage{text, raw} {
		for k, v := range fields {
			var n uint64
			if json.Unmarshal(v, &n) == nil {
				c.Ints[k] = n
			}
		}
	}
	return c
}
