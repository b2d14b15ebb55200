package verify

import (
	"fmt"
	"strings"

	"github.com/ckptcheck/ckptcheck/checkpoint"
	"github.com/ckptcheck/ckptcheck/gguf"
)

// Split GGUF files, as llama.cpp's gguf-split writes them
// (tools/gguf-split/gguf-split.cpp, ggml-org/llama.cpp @ 01243c58):
// model-00001-of-00003.gguf …, each with split.no (from 0), split.count,
// and split.tensors.count (the tensors of all), the metadata in the first.
// The checkpoint reads them as its shards, one checkpoint; these checks
// see them together.
const (
	splitNoKey     = "split.no"
	splitCountKey  = "split.count"
	splitTensorKey = "split.tensors.count"
)

// splitCount is f's split.count, 0 when it has none.
func splitCount(f *gguf.File) uint64 {
	v, ok := f.Lookup(splitCountKey)
	if !ok {
		return 0
	}
	n, _ := v.Uint()
	return n
}

// ggufSplits checks the split GGUF files of c: each split of split.count
// present once (gguf_split_missing names the absent ones), the tensors of
// all as many as split.tensors.count says, and the metadata of the first
// split against the tensors of all (gguf_metadata_mismatch).
func ggufSplits(c *checkpoint.Checkpoint) []Finding {
	var files []*gguf.File
	var shards []*checkpoint.Shard
	for _, s := range c.Shards {
		if f, ok := s.Header.(*gguf.File); ok && splitCount(f) > 1 {
			files, shards = append(files, f), append(shards, s)
		}
	}
	if len(files) == 0 {
		return nil
	}
	count := splitCount(files[0])
	first := -1
	seen := map[uint64]string{}
	var out []Finding
	bad := func(s *checkpoint.Shard, msg string, args ...any) {
		out = append(out, Finding{Code: CodeGGUFSplitMissing, Severity: Error, File: s.Path, Message: fmt.Sprintf(msg, args...)})
	}
	var tensors uint64
	for i, f := range files {
		tensors += uint64(len(f.Tensors))
		v, ok := f.Lookup(splitNoKey)
		no, ok2 := v.Uint()
		switch {
		case !ok || !ok2:
			bad(shards[i], "a split file (split.count %d) without a split.no", splitCount(f))
			continue
		case splitCount(f) != count:
			bad(shards[i], "split.count is %d here, %d in %s", splitCount(f), count, shards[0].Name)
			continue
		case no >= count:
			bad(shards[i], "split.no %d of split.count %d", no, count)
			continue
		case seen[no] != "":
			bad(shards[i], "split.no %d again (also %s)", no, seen[no])
			continue
		}
		seen[no] = shards[i].Name
		if no == 0 {
			first = i
		}
	}
	if uint64(len(seen)) < count {
		var missing []string
		for no := range min(count, uint64(len(files))+64) { // names of at most 64 more than present
			if seen[no] == "" {
				missing = append(missing, splitName(shards[0].Name, no, count))
			}
		}
		out = append(out, Finding{Code: CodeGGUFSplitMissing, Severity: Error, File: c.Path,
			Message: fmt.Sprintf("split.count is %d, but %d split file(s) are here: missing %s", count, len(seen), strings.Join(missing, ", "))})
	}
	if first < 0 {
		return out
	}
	if v, ok := files[first].Lookup(splitTensorKey); ok {
		if want, ok := v.Uint(); ok && want != tensors && len(out) == 0 {
			bad(shards[first], "split.tensors.count is %d, but the split files hold %d tensors", want, tensors)
		}
	}
	if files[first].Architecture() == "" {
		return out
	}
	return append(out, ggufMetadataOf(files[first], files, shards[first].Path)...)
}

// splitName is the name of split no (from 0) of count, after name's
// pattern (llama_split_path: PREFIX-%05d-of-%05d.gguf), or "split N".
func splitName(name string, no, count uint64) string {
	if i := strings.LastIndex(name, "-of-"); i >= 6 && name[i-6] == '-' {
		return fmt.Sprintf("%s-%05d-of-%05d.gguf", name[:i-6], no+1, count)
	}
	return fmt.Sprintf("split %d", no+1)
}
