package manifest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"

	"github.com/ckptcheck/ckptcheck/checkpoint"
	"github.com/ckptcheck/ckptcheck/partition"
	"github.com/ckptcheck/ckptcheck/verify"
)

// Work that reads whole files (a manifest's hashing, validate --hashes) is
// shared out by file: each file is one item weighed by its size, assigned
// by Assign like the tensors of diff --values.

// FileItems weighs files for Assign.
func FileItems(files []checkpoint.FileInfo) []partition.Item {
	items := make([]partition.Item, len(files))
	for i, f := range files {
		items[i] = partition.Item{Name: f.Name, Weight: f.Size}
	}
	return items
}

// SelectFiles is the files of partition p, with their places in files.
func SelectFiles(files []checkpoint.FileInfo, p partition.Partition) ([]checkpoint.FileInfo, []verify.Covered) {
	in := p.Select(FileItems(files))
	var mine []checkpoint.FileInfo
	covered := []verify.Covered{}
	for i, f := range files {
		if in[i] {
			mine = append(mine, f)
			covered = append(covered, verify.Covered{Key: f.Name, At: i, Bytes: f.Size})
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

// A Part says which partition of a manifest's files a manifest
// holds; a whole manifest has none.
type Part struct {
	partition.Partition
	Fingerprint string `json:"fingerprint"`
	// Items is how many files the whole manifest has.
	Items int `json:"items"`
	// Files are the files this partition hashed, with their places.
	Files []verify.Covered `json:"files"`
}

// An Input is a partial manifest and the name it was read from.
type Input struct {
	Name     string
	Manifest *Manifest
}

// MergeParts merges the partial manifests of one partitioned
// manifest run into the manifest the run would have written whole. Unlike
// reports, a manifest with a part missing cannot stand for the checkpoint:
// a missing partition, a foreign one (another fingerprint or count) or a
// damaged one is an error; a partition given twice merges its first copy.
func MergeParts(parts []Input) (*Manifest, error) {
	if len(parts) == 0 {
		return nil, fmt.Errorf("no manifests to merge")
	}
	checked := make([]partition.Part, len(parts))
	for k, in := range parts {
		p := in.Manifest.Partition
		if p == nil {
			return nil, fmt.Errorf("%s: not a partial manifest (it was not made with --partition)", in.Name)
		}
		checked[k] = partition.Part{Name: in.Name, Partition: p.Partition, Fingerprint: p.Fingerprint, Items: p.Items, At: make([]int, len(p.Files))}
		for i, f := range p.Files {
			checked[k].At[i] = f.At
		}
	}
	set, err := partition.Check(checked, partition.Kind{Part: "manifest", Item: "file"})
	if err != nil {
		return nil, err
	}
	if len(set.Missing) > 0 {
		return nil, fmt.Errorf("%s missing: a manifest needs every file", set.MissingText())
	}
	whole := make([]*Manifest, len(set.First))
	for i, k := range set.First {
		whole[i] = parts[k].Manifest
	}
	out, err := Merge(whole...)
	if err != nil {
		return nil, err
	}
	out.Partition = nil
	return out, nil
}

// A HashesPart is what validate --hashes --partition's report of one
// partition holds.
type HashesPart struct {
	FailOn verify.Severity
	Inputs []verify.Input
	// Structural are the validation findings: carried only in partition 0's
	// report. Hashes are the hash findings of the partition's own files.
	Structural, Hashes []verify.Finding
	Partition          partition.Partition
	// Covered are the files the partition hashed (SelectFiles), of Items
	// in the whole run, whose FilesFingerprint is Fingerprint.
	Covered     []verify.Covered
	Items       int
	Fingerprint string
}

// NewHashesReport is validate --hashes' report for a partition of its
// files: the validation findings only in partition 0's, the hash findings
// of its own files, and what verify.Merge needs.
func NewHashesReport(h HashesPart) *verify.Report {
	structural := h.Structural
	if h.Partition.Index != 0 {
		structural = nil
	}
	r := verify.NewReport("validate", h.FailOn, h.Inputs, append(slices.Clip(structural), h.Hashes...))
	r.Partition = &verify.PartitionInfo{Partition: h.Partition, Fingerprint: h.Fingerprint, Structural: len(structural), Items: h.Items, Tensors: h.Covered}
	return r
}
