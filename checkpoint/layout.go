package checkpoint

import (
	"maps"
	"regexp"
	"strings"
	"sync"
)

// A Layout is a way of spreading one checkpoint over several files, told
// by an index file: Hugging Face's index over shards (HFIndex) is the one
// there is; a PyTorch .bin index, a torch.distributed checkpoint's
// .metadata and GGUF splits are others to come. A Layout reads only names
// and the index's bytes; each shard is then opened as the format its name
// says (see IsTensorFile).
type Layout interface {
	// Name names the layout in messages ("hf-index").
	Name() string
	// IsIndex reports whether a file given as a checkpoint's path is one
	// of the layout's index files.
	IsIndex(name string) bool
	// Indexes picks the layout's index files from a directory's file
	// names, in their order: the index of each variant ("" for the plain
	// checkpoint), and others, indexes under names of their own, which
	// serve the plain checkpoint when it has no index by the usual name.
	Indexes(names []string) (byVariant map[string]string, others []string)
	// ParseIndex parses an index file's bytes. A file that is no usable
	// index is an error, and the Index nil.
	ParseIndex(b []byte) (*Index, error)
}

// HFIndex is Hugging Face's layout: <name><ext>.index.json, whose
// weight_map maps tensor names to shard files of a registered format
// (model.safetensors.index.json over model-00001-of-00002.safetensors), as
// transformers and diffusers write it, with their variant names
// (model.safetensors.index.fp16.json).
var HFIndex Layout = hfIndex{}

// layouts are the layouts Open knows, tried in order.
var layouts = []Layout{HFIndex}

// indexLayout returns the layout whose index a file given as a path is.
func indexLayout(name string) (Layout, bool) {
	for _, l := range layouts {
		if l.IsIndex(name) {
			return l, true
		}
	}
	return nil, false
}

// layoutOf returns the layout an index file chosen from a listing or given
// as a path is of (a variant's index need not look like one given as a
// path: model.safetensors.index.fp16.json).
func layoutOf(index string) Layout {
	if l, ok := indexLayout(index); ok {
		return l
	}
	for _, l := range layouts {
		if byVariant, others := l.Indexes([]string{index}); len(byVariant)+len(others) > 0 {
			return l
		}
	}
	return HFIndex
}

type hfIndex struct{}

func (hfIndex) Name() string { return "hf-index" }

// hfIndexSuffix ends every index file: a file named so is read as an index
// when it is given as the path, whatever comes before.
const hfIndexSuffix = ".index.json"

func (hfIndex) IsIndex(name string) bool { return strings.HasSuffix(name, hfIndexSuffix) }

// variantShard and variantIndex match transformers' variant file names,
// less the format's extension (variantShard) or with it as the second
// group (variantIndex): model.fp16.safetensors,
// model.fp16-00001-of-00002.safetensors, model.safetensors.index.fp16.json.
// plainIndex matches the usual names of the plain checkpoint's index.
var (
	variantShard = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^(model|pytorch_model|diffusion_pytorch_model)\.([A-Za-z0-9_]+)(-\d+-of-\d+)?$`)
	})
	variantIndex = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^(model|pytorch_model|diffusion_pytorch_model)((?:\.[A-Za-z0-9_]+)+?)\.index\.([A-Za-z0-9_]+)\.json$`)
	})
	plainIndex = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^(model|pytorch_model|diffusion_pytorch_model)((?:\.[A-Za-z0-9_]+)+?)\.index\.json$`)
	})
)

// isExt reports whether ext is a registered format's whole extension.
func isExt(ext string) bool { return ext != "" && tensorExt("x"+ext) == ext }

func (hfIndex) Indexes(names []string) (byVariant map[string]string, others []string) {
	byVariant = map[string]string{}
	for _, n := range names {
		variant, ok := "", false
		if m := variantIndex().FindStringSubmatch(n); m != nil && isExt(m[2]) {
			variant, ok = m[3], true
		} else if m := plainIndex().FindStringSubmatch(n); m != nil && isExt(m[2]) {
			ok = true
		}
		if _, taken := byVariant[variant]; ok && taken {
			// One variant's index in two formats (model.safetensors.index.json,
			// pytorch_model.bin.index.json): the first by name serves it.
			others = append(others, n)
		} else if ok {
			byVariant[variant] = n
		} else if strings.HasSuffix(n, hfIndexSuffix) && IsWeightFile(strings.TrimSuffix(n, hfIndexSuffix)) {
			others = append(others, n)
		}
	}
	return byVariant, others
}

func (hfIndex) ParseIndex(b []byte) (*Index, error) { return ParseIndex(b) }

// shardVariant is the variant a tensor file's name is of ("fp16" for
// model.fp16.safetensors), "" for the plain checkpoint's.
func shardVariant(name string) string {
	stem := strings.TrimSuffix(name, tensorExt(name))
	if m := variantShard().FindStringSubmatch(stem); m != nil && stem != name {
		return m[2]
	}
	return ""
}

// listIndexes picks the index files of every layout from a listing: by
// variant, and the others (see Layout.Indexes). An earlier layout wins.
func listIndexes(entries []Entry) (byVariant map[string]string, others []string) {
	names := entryNames(entries)
	byVariant = map[string]string{}
	for i := len(layouts) - 1; i >= 0; i-- {
		v, o := layouts[i].Indexes(names)
		maps.Copy(byVariant, v)
		others = append(o, others...)
	}
	return byVariant, others
}

func entryNames(entries []Entry) []string {
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name
	}
	return names
}

// IsIndex reports whether a file name is an index file of a layout Open
// knows (a *.index.json): what Open reads as an index when it is given as
// the path.
func IsIndex(name string) bool {
	_, ok := indexLayout(name)
	return ok
}
