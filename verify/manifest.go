package verify

import (
	"cmp"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/ckptcheck/ckptcheck/checkpoint"
	"github.com/ckptcheck/ckptcheck/internal/textfmt"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// ManifestSchema names the manifest format; renaming or removing a field
// makes a new version.
const ManifestSchema = "ckptcheck.manifest/v1"

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
	Partition *ManifestPart    `json:"partition,omitempty"`
	Files     []ManifestFile   `json:"files"`
	Tensors   []ManifestTensor `json:"tensors"`
}

// A ManifestFile is one file of a checkpoint.
type ManifestFile struct {
	Name string `json:"name"`
	// Kind is "shard", "index", or what a file beside the weights is for
	// ("config", "tokenizer", "generation", "chat_template", "processor").
	Kind   string `json:"kind"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// A ManifestTensor is one tensor of a checkpoint.
type ManifestTensor struct {
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

// ManifestOptions tune BuildManifest.
type ManifestOptions struct {
	// Tool is written as the manifest's tool.
	Tool string
	// Workers is how many files are hashed at once; 0 means GOMAXPROCS.
	Workers int
	// Progress, if set, is called with the bytes each read added, from
	// several goroutines.
	Progress func(n int64)
}

// ManifestWork lists the files a manifest of c hashes, sorted by name, with
// their sizes: its shards, its index and the files beside the weights. A
// partitioned run hashes a subset of them (BuildManifest) and the parts are
// merged (MergeManifests); the list depends on the folder alone.
func ManifestWork(ctx context.Context, c *checkpoint.Checkpoint) ([]checkpoint.FileInfo, error) {
	return c.Files(ctx)
}

// BuildManifest reads each of files (ManifestWork's list, or a subset of
// it) once, computing its SHA-256 and, for a shard, the xxh3-64 of every
// tensor, with one file per worker. Tensors of shards whose layout is
// invalid are listed without a hash.
func BuildManifest(ctx context.Context, c *checkpoint.Checkpoint, files []checkpoint.FileInfo, opt ManifestOptions) (*Manifest, error) {
	shards := make(map[string]*checkpoint.Shard, len(c.Shards))
	for _, s := range c.Shards {
		shards[s.Name] = s
	}
	jobs := make([]hashJob, len(files))
	tensors := make([][]*safetensors.Tensor, len(files))
	m := &Manifest{Schema: ManifestSchema, Tool: opt.Tool, Files: make([]ManifestFile, len(files)), Tensors: []ManifestTensor{}}
	for i, fi := range files {
		jobs[i] = hashJob{name: fi.Name, size: fi.Size, sha256: true}
		m.Files[i] = ManifestFile{Name: fi.Name, Size: fi.Size, Kind: string(checkpoint.CompanionKind(fi.Name))}
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
		jobs[i].ranges = make([]byteRange, len(ts))
		for k, t := range ts {
			jobs[i].ranges[k] = byteRange{base + int64(t.DataOffsets[0]), base + int64(t.DataOffsets[1])}
		}
		tensors[i] = ts
	}
	results, err := hashFiles(ctx, c.Source, jobs, hashOptions{workers: opt.Workers, progress: opt.Progress})
	if err != nil {
		return nil, err
	}
	for i, r := range results {
		m.Files[i].SHA256 = hex.EncodeToString(r.sha256[:])
		for k, t := range tensors[i] {
			m.Tensors = append(m.Tensors, manifestTensor(t, files[i].Name, xxh3Hex(r.ranges[k])))
		}
	}
	m.sort()
	return m, nil
}

func manifestTensor(t *safetensors.Tensor, file, xxh string) ManifestTensor {
	shape := t.Shape
	if shape == nil {
		shape = []uint64{}
	}
	return ManifestTensor{Name: t.Name, DType: t.DType.String(), Shape: shape, XXH3: xxh, File: file}
}

func xxh3Hex(v uint64) string {
	s := strconv.FormatUint(v, 16)
	return strings.Repeat("0", 16-len(s)) + s
}

func (m *Manifest) sort() {
	slices.SortFunc(m.Files, func(a, b ManifestFile) int { return strings.Compare(a.Name, b.Name) })
	slices.SortFunc(m.Tensors, func(a, b ManifestTensor) int {
		return cmp.Or(strings.Compare(a.Name, b.Name), strings.Compare(a.File, b.File))
	})
}

// MergeManifests joins the manifests of a partitioned run, each built from
// a subset of one checkpoint's files, into the manifest of the whole. A
// file in two parts is an error.
func MergeManifests(parts ...*Manifest) (*Manifest, error) {
	out := &Manifest{Schema: ManifestSchema, Files: []ManifestFile{}, Tensors: []ManifestTensor{}}
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

// WriteJSON writes the manifest as one indented JSON document.
func (m *Manifest) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(m)
}

// maxManifest bounds a manifest read: one for a 600B-parameter MoE model
// (100k tensors) is about 25 MB.
const maxManifest = 1 << 30

// ReadManifest reads a manifest written by WriteJSON. Another schema, a
// malformed entry (a digest that is not hex of the right length, an unknown
// dtype) or a name given twice is an error saying where.
func ReadManifest(r io.Reader) (*Manifest, error) {
	lr := &io.LimitedReader{R: r, N: maxManifest + 1}
	var m Manifest
	dec := json.NewDecoder(lr)
	if err := dec.Decode(&m); err != nil {
		if lr.N <= 0 {
			return nil, fmt.Errorf("not a ckptcheck manifest: larger than %s bytes", textfmt.Thousands(maxManifest))
		}
		return nil, fmt.Errorf("not a ckptcheck manifest: %v", jsonMessage(err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("not a ckptcheck manifest: more than one JSON value")
	}
	if m.Schema == "" {
		return nil, fmt.Errorf("not a ckptcheck manifest: no \"schema\": %q", ManifestSchema)
	}
	if m.Schema != ManifestSchema {
		return nil, fmt.Errorf("manifest schema %q, want %q", m.Schema, ManifestSchema)
	}
	files := make(map[string]bool, len(m.Files))
	for i, f := range m.Files {
		switch {
		case f.Name == "":
			return nil, fmt.Errorf("manifest files[%d]: no name", i)
		case files[f.Name]:
			return nil, fmt.Errorf("manifest files[%d]: %s is listed twice", i, textfmt.Quote(f.Name))
		case f.Size < 0:
			return nil, fmt.Errorf("manifest files[%d] (%s): negative size", i, textfmt.Quote(f.Name))
		case !isHex(f.SHA256, 64):
			return nil, fmt.Errorf("manifest files[%d] (%s): sha256 %q is not 64 hex digits", i, textfmt.Quote(f.Name), f.SHA256)
		}
		files[f.Name] = true
		m.Files[i].SHA256 = strings.ToLower(f.SHA256)
	}
	tensors := make(map[string]bool, len(m.Tensors))
	for i, t := range m.Tensors {
		switch {
		case t.Name == "":
			return nil, fmt.Errorf("manifest tensors[%d]: no name", i)
		case tensors[t.Name]:
			return nil, fmt.Errorf("manifest tensors[%d]: %s is listed twice", i, textfmt.Quote(t.Name))
		case !isHex(t.XXH3, 16):
			return nil, fmt.Errorf("manifest tensors[%d] (%s): xxh3 %q is not 16 hex digits", i, textfmt.Quote(t.Name), t.XXH3)
		}
		if _, ok := safetensors.ParseDType(t.DType); !ok {
			return nil, fmt.Errorf("manifest tensors[%d] (%s): unknown dtype %q", i, textfmt.Quote(t.Name), t.DType)
		}
		tensors[t.Name] = true
		m.Tensors[i].XXH3 = strings.ToLower(t.XXH3)
	}
	m.sort()
	return &m, nil
}

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// CompareManifest compares a checkpoint's manifest (got, built now) with the
// one recorded (want): manifest_mismatch for each tensor whose dtype, shape
// or bytes differ and each other file whose bytes differ,
// manifest_missing and manifest_extra for tensors and files on one side
// only. Shards and the index are judged by the tensors they hold: when every
// tensor matches, shard files that differ (a re-sharded or re-written
// checkpoint) are one manifest_shards_differ info. where says how reports
// name a file of the checkpoint (its Source's Path); where(".") names the
// checkpoint. It is a pure function of its inputs.
func CompareManifest(want, got *Manifest, where func(name string) string) []Finding {
	path := where(".")
	var out []Finding
	wantT := make(map[string]*ManifestTensor, len(want.Tensors))
	for i := range want.Tensors {
		wantT[want.Tensors[i].Name] = &want.Tensors[i]
	}
	gotT := make(map[string]bool, len(got.Tensors))
	for _, g := range got.Tensors {
		gotT[g.Name] = true
		w, ok := wantT[g.Name]
		if !ok {
			out = append(out, Finding{Code: CodeManifestExtra, Severity: Error, Key: g.Name, File: where(g.File),
				Message: fmt.Sprintf("a %s %s tensor the manifest does not list", g.DType, safetensors.FormatShape(g.Shape))})
			continue
		}
		if g.XXH3 == "" {
			continue // its shard could not be read: validation says why
		}
		var diffs []string
		var expected, gotDetail []string
		if w.DType != g.DType {
			diffs = append(diffs, fmt.Sprintf("dtype %s → %s", w.DType, g.DType))
			expected, gotDetail = append(expected, w.DType), append(gotDetail, g.DType)
		}
		if !slices.Equal(w.Shape, g.Shape) {
			diffs = append(diffs, fmt.Sprintf("shape %s → %s", safetensors.FormatShape(w.Shape), safetensors.FormatShape(g.Shape)))
			expected, gotDetail = append(expected, safetensors.FormatShape(w.Shape)), append(gotDetail, safetensors.FormatShape(g.Shape))
		}
		if w.XXH3 != g.XXH3 && len(diffs) == 0 {
			diffs = append(diffs, fmt.Sprintf("bytes differ (xxh3 %s in the manifest, %s here)", w.XXH3, g.XXH3))
			expected, gotDetail = append(expected, "xxh3:"+w.XXH3), append(gotDetail, "xxh3:"+g.XXH3)
		}
		if len(diffs) > 0 {
			out = append(out, Finding{Code: CodeManifestMismatch, Severity: Error, Key: g.Name, File: where(g.File),
				Message: strings.Join(diffs, ", "), Expected: strings.Join(expected, ", "), Got: strings.Join(gotDetail, ", ")})
		}
	}
	for _, w := range want.Tensors {
		if !gotT[w.Name] {
			out = append(out, Finding{Code: CodeManifestMissing, Severity: Error, Key: w.Name,
				Message: fmt.Sprintf("the manifest lists a %s %s tensor (in %s) that %s does not have", w.DType, safetensors.FormatShape(w.Shape), textfmt.Quote(w.File), textfmt.Quote(path))})
		}
	}
	tensorsMatch := len(out) == 0
	wantF := make(map[string]*ManifestFile, len(want.Files))
	for i := range want.Files {
		wantF[want.Files[i].Name] = &want.Files[i]
	}
	gotF := make(map[string]*ManifestFile, len(got.Files))
	for i := range got.Files {
		gotF[got.Files[i].Name] = &got.Files[i]
	}
	var weightsDiffer []string
	for _, g := range got.Files {
		w := wantF[g.Name]
		switch {
		case weightFile(g.Kind) || (w != nil && weightFile(w.Kind)):
			if w == nil || w.SHA256 != g.SHA256 || w.Kind != g.Kind {
				weightsDiffer = append(weightsDiffer, g.Name)
			}
		case w == nil:
			out = append(out, Finding{Code: CodeManifestExtra, Severity: Error, File: where(g.Name),
				Message: fmt.Sprintf("a file (%s, %s) the manifest does not list", g.Kind, textfmt.Plural(g.Size, "byte"))})
		case w.SHA256 != g.SHA256:
			out = append(out, Finding{Code: CodeManifestMismatch, Severity: Error, File: where(g.Name),
				Message:  fmt.Sprintf("bytes differ from the manifest's (%s → %s; sha256 %s… → %s…)", textfmt.Plural(w.Size, "byte"), textfmt.Plural(g.Size, "byte"), w.SHA256[:12], g.SHA256[:12]),
				Expected: "sha256:" + w.SHA256, Got: "sha256:" + g.SHA256})
		}
	}
	for _, w := range want.Files {
		if gotF[w.Name] != nil {
			continue
		}
		if weightFile(w.Kind) {
			weightsDiffer = append(weightsDiffer, w.Name)
			continue
		}
		out = append(out, Finding{Code: CodeManifestMissing, Severity: Error, File: where(w.Name),
			Message: fmt.Sprintf("the manifest lists this file (%s, %s) but %s does not have it", w.Kind, textfmt.Plural(w.Size, "byte"), textfmt.Quote(path))})
	}
	if tensorsMatch && len(weightsDiffer) > 0 {
		slices.Sort(weightsDiffer)
		out = append(out, Finding{Code: CodeManifestShardsDiffer, Severity: Info, File: path,
			Message: fmt.Sprintf("every tensor matches the manifest, but the shard files differ (re-sharded or re-written): %s", nameList(weightsDiffer, 6))})
	}
	return out
}

// nameList writes up to n names and how many more there are.
func nameList(names []string, n int) string {
	quoted := make([]string, 0, min(n, len(names)))
	for _, s := range names[:min(n, len(names))] {
		quoted = append(quoted, textfmt.Quote(s))
	}
	s := strings.Join(quoted, ", ")
	if len(names) > n {
		s += fmt.Sprintf(" and %d more", len(names)-n)
	}
	return s
}
