package verify

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"

	"github.com/ckptcheck/ckptcheck/checkpoint"
	"github.com/ckptcheck/ckptcheck/internal/textfmt"
)

// Work that reads whole files (a manifest's hashing, validate --hashes) is
// shared out by file: each file is one item weighed by its size, assigned
// by Assign like the tensors of diff --values.

// FileItems weighs files for Assign.
func FileItems(files []checkpoint.FileInfo) []Item {
	items := make([]Item, len(files))
	for i, f := range files {
		items[i] = Item{Name: f.Name, Weight: f.Size}
	}
	return items
}

// SelectFiles is the files of partition p, with their places in files.
func SelectFiles(files []checkpoint.FileInfo, p Partition) ([]checkpoint.FileInfo, []Covered) {
	in := p.Select(FileItems(files))
	var mine []checkpoint.FileInfo
	covered := []Covered{}
	for i, f := range files {
		if in[i] {
			mine = append(mine, f)
			covered = append(covered, Covered{Key: f.Name, At: i, Bytes: f.Size})
		}
	}
	return mine, covered
}

// FilesFingerprint is the fingerprint of a run over files: the files' names,
// sizes and versions (a local file's modification time, a remote one's
// ETag, a hub-cache file's commit), and the settings and tool version
// (settings). Two partitions merge only when they agree on it.
func FilesFingerprint(c *checkpoint.Checkpoint, files []checkpoint.FileInfo, settings []string) string {
	h := sha256.New()
	put := func(s string) {
		h.Write([]byte(strconv.Itoa(len(s))))
		h.Write([]byte{':'})
		h.Write([]byte(s))
	}
	if c.Hub != nil {
		put("commit " + c.Hub.Commit)
	}
	for _, f := range files {
		put(f.Name)
		put(strconv.FormatInt(f.Size, 10))
	}
	for _, s := range c.Shards {
		put(s.Name)
		put(s.Version)
	}
	for _, s := range settings {
		put(s)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// A ManifestPart says which partition of a manifest's files a manifest
// holds; a whole manifest has none.
type ManifestPart struct {
	Partition
	Fingerprint string `json:"fingerprint"`
	// Items is how many files the whole manifest has.
	Items int `json:"items"`
	// Files are the files this partition hashed, with their places.
	Files []Covered `json:"files"`
}

// A ManifestInput is a partial manifest and the name it was read from.
type ManifestInput struct {
	Name     string
	Manifest *Manifest
}

// MergeManifestParts merges the partial manifests of one partitioned
// manifest run into the manifest the run would have written whole. Unlike
// reports, a manifest with a part missing cannot stand for the checkpoint:
// a missing partition, a foreign one (another fingerprint or count) or a
// damaged one is an error; a partition given twice merges its first copy.
func MergeManifestParts(parts []ManifestInput) (*Manifest, error) {
	if len(parts) == 0 {
		return nil, fmt.Errorf("no manifests to merge")
	}
	first := parts[0]
	if first.Manifest.Partition == nil {
		return nil, fmt.Errorf("%s: not a partial manifest (it was not made with --partition)", first.Name)
	}
	n := first.Manifest.Partition.Count
	byIndex := make([]*Manifest, n)
	for _, in := range parts {
		p := in.Manifest.Partition
		switch {
		case p == nil:
			return nil, fmt.Errorf("%s: not a partial manifest (it was not made with --partition)", in.Name)
		case p.Count != n || p.Index < 0 || p.Index >= n:
			return nil, fmt.Errorf("%s is partition %d/%d but %s is of %d: the manifests are of different runs", in.Name, p.Index, p.Count, first.Name, n)
		case p.Fingerprint != first.Manifest.Partition.Fingerprint || p.Items != first.Manifest.Partition.Items:
			return nil, fmt.Errorf("%s has fingerprint %s but %s has %s: the manifests are of different checkpoints, settings or ckptcheck versions",
				in.Name, p.Fingerprint, first.Name, first.Manifest.Partition.Fingerprint)
		}
		for _, f := range p.Files {
			if f.At < 0 || f.At >= p.Items {
				return nil, fmt.Errorf("%s: file %d of %d: the manifest is damaged", in.Name, f.At, p.Items)
			}
		}
		if byIndex[p.Index] == nil {
			byIndex[p.Index] = in.Manifest
		}
	}
	var missing []int
	var whole []*Manifest
	for i, m := range byIndex {
		if m == nil {
			missing = append(missing, i)
		}
		whole = append(whole, m)
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%s %s of %d missing: a manifest needs every file", partitionsWord(len(missing)), textfmt.IndexRanges(missing), n)
	}
	covered := 0
	for _, m := range whole {
		covered += len(m.Partition.Files)
	}
	if covered != first.Manifest.Partition.Items {
		return nil, fmt.Errorf("the partitions cover %d files of %d: the manifests are damaged", covered, first.Manifest.Partition.Items)
	}
	out, err := MergeManifests(whole...)
	if err != nil {
		return nil, err
	}
	out.Partition = nil
	return out, nil
}

// NewHashesReport is validate --hashes' report for partition p of its
// files: the validation findings (structural) only in partition 0's, the
// hash findings of its own files, and what Merge needs.
func NewHashesReport(failOn Severity, inputs []Input, structural, hashes []Finding, p Partition, covered []Covered, items int, fingerprint string) *Report {
	if p.Index != 0 {
		structural = nil
	}
	r := NewReport("validate", failOn, inputs, append(slices.Clip(structural), hashes...))
	r.Partition = &PartitionInfo{Partition: p, Fingerprint: fingerprint, Structural: len(structural), Items: items, Tensors: covered}
	return r
}
