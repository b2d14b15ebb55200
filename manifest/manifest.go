package manifest

import (
	"cmp"
	"context"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ckptcheck/ckptcheck/checkpoint"
	"github.com/ckptcheck/ckptcheck/internal/filehash"
	"github.com/ckptcheck/ckptcheck/internal/textfmt"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// Schema names the manifest format; renaming or removing a field
// makes a new version.
const Schema = "ckptcheck.manifest/v1"

// A Manifest records a checkpoint as it was: every file with its size and
// SHA-256 (the digest the Hub shows as an LFS file's sha256), and every
// tensor with its dtype, shape and the xxh3-64 of its bytes. A checkpoint
// checked against it later matches when its tensors do, however they are
// sharded.
type Manifest struct {
	Schema string `json:"schema"`
	// Tool is the program and version that wrote it.
	Tool string `json:"tool"`
	// Partition, in a partial manifest (manifest --partition), says which
	// share of the files it holds; merge joins the parts.
	Partition *Part    `json:"partition,omitempty"`
	Files     []File   `json:"files"`
	Tensors   []Tensor `json:"tensors"`
}

// A File is one file of a checkpoint.
type File struct {
	Name string `json:"name"`
	// Kind is "shard", "index", or what a file beside the weights is for
	// ("config", "tokenizer", "generation", "chat_template", "processor").
	Kind   string `json:"kind"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// A Tensor is one tensor of a checkpoint.
type Tensor struct {
	Name  string   `json:"name"`
	DType string   `json:"dtype"`
	Shape []uint64 `json:"shape"`
	// XXH3 is the xxh3-64 (seed 0) of the tensor's bytes, 16 hex digits;
	// empty in a manifest built from a checkpoint whose shard could not be
	// read (never in one that was written).
	XXH3 string `json:"xxh3"`
	// File is the shard holding it.
	File string `json:"file"`
}

// File kinds of a manifest beside the companion kinds.
const (
	KindShard = "shard"
	KindIndex = "index"
)

// weightFile reports whether a manifest file holds the tensors' layout
// (a shard or the index): re-sharding changes these and nothing else.
func weightFile(kind string) bool { return kind == KindShard || kind == KindIndex }

// Options tune Build.
type Options struct {
	// Tool is written as the manifest's tool.
	Tool string
	// Workers is how many files are hashed at once; 0 means GOMAXPROCS.
	Workers int
	// Progress, if set, is called with the bytes each read added, from
	// several goroutines.
	Progress func(n int64)
}

// Work lists the files a manifest of c hashes, sorted by name, with
// their sizes: its shards, its index and the files beside the weights. A
// partitioned run hashes a subset of them (Build) and the parts are
// merged (Merge); the list depends on the folder alone.
func Work(ctx context.Context, c *checkpoint.Checkpoint) ([]checkpoint.FileInfo, error) {
	return c.Files(ctx)
}

// Build reads each of files (Work's list, or a subset of
// it) once, computing its SHA-256 and, for a shard, the xxh3-64 of every
// tensor, with one file per worker. Tensors of shards whose layout is
// invalid are listed without a hash.
func Build(ctx context.Context, c *checkpoint.Checkpoint, files []checkpoint.FileInfo, opt Options) (*Manifest, error) {
	shards := make(map[string]*checkpoint.Shard, len(c.Shards))
	for _, s := range c.Shards {
		shards[s.Name] = s
	}
	jobs := make([]filehash.Job, len(files))
	tensors := make([][]*safetensors.Tensor, len(files))
	m := &Manifest{Schema: Schema, Tool: opt.Tool, Files: make([]File, len(files)), Tensors: []Tensor{}}
	for i, fi := range files {
		jobs[i] = filehash.Job{Name: fi.Name, Size: fi.Size, Want: filehash.Want{SHA256: true}}
		m.Files[i] = File{Name: fi.Name, Size: fi.Size, Kind: string(checkpoint.CompanionKind(fi.Name))}
		if c.Index != nil && fi.Name == c.Index.Name {
			m.Files[i].Kind = KindIndex
		}
		s := shards[fi.Name]
		if s == nil {
			continue
		}
		m.Files[i].Kind = KindShard
		h := s.Safetensors()
		if h == nil {
			continue
		}
		ts := slices.Clone(h.Tensors)
		if s.File == nil {
			for _, t := range ts { // listed, not hashed: the layout is invalid
				m.Tensors = append(m.Tensors, manifestTensor(t, s.Name, ""))
			}
			continue
		}
		slices.SortFunc(ts, func(a, b *safetensors.Tensor) int { return cmp.Compare(a.DataOffsets[0], b.DataOffsets[0]) })
		base := h.DataOffset()
		jobs[i].Ranges = make([]filehash.Range, len(ts))
		for k, t := range ts {
			jobs[i].Ranges[k] = filehash.Range{Start: base + int64(t.DataOffsets[0]), End: base + int64(t.DataOffsets[1])}
		}
		tensors[i] = ts
	}
	results, err := hashFiles(ctx, c.Source, jobs, opt.Workers, opt.Progress)
	if err != nil {
		return nil, err
	}
	for i, r := range results {
		m.Files[i].SHA256 = hex.EncodeToString(r.SHA256[:])
		for k, t := range tensors[i] {
			m.Tensors = append(m.Tensors, manifestTensor(t, files[i].Name, xxh3Hex(r.Ranges[k])))
		}
	}
	m.sort()
	return m, nil
}

func manifestTensor(t *safetensors.Tensor, file, xxh string) Tensor {
	shape := t.Shape
	if shape == nil {
		shape = []uint64{}
	}
	return Tensor{Name: t.Name, DType: t.DType.String(), Shape: shape, XXH3: xxh, File: file}
}

func xxh3Hex(v uint64) string {
	s := strconv.FormatUint(v, 16)
	return strings.Repeat("0", 16-len(s)) + s
}

func (m *Manifest) sort() {
	slices.SortFunc(m.Files, func(a, b File) int { return strings.Compare(a.Name, b.Name) })
	slices.SortFunc(m.Tensors, func(a, b Tensor) int {
		return cmp.Or(strings.Compare(a.Name, b.Name), strings.Compare(a.File, b.File))
	})
}

// Merge joins the manifests of a partitioned run, each built from
// a subset of one checkpoint's files, into the manifest of the whole. A
// file in two parts is an error.
func Merge(parts ...*Manifest) (*Manifest, error) {
	out := &Manifest{Schema: Schema, Files: []File{}, Tensors: []Tensor{}}
	seen := make(map[string]bool)
	for _, p := range parts {
		if out.Tool == "" {
			out.Tool = p.Tool
		}
		for _, f := range p.Files {
			if seen[f.Name] {
				return nil, fmt.Errorf("file %s is in two parts", textfmt.Quote(f.Name))
			}
			seen[f.Name] = true
		}
		out.Files = append(out.Files, p.Files...)
		out.Tensors = append(out.Tensors, p.Tensors...)
	}
	out.sort()
	return out, nil
}
