package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// Choosing which files of a folder are the checkpoint: the variants, an
// index of a registered format, or every tensor file.

// listShards lists the tensor files of a variant in the source, and the
// variants present.
func (c *Checkpoint) listShards(ctx context.Context, variant string) (variants, names []string, err error) {
	entries, err := c.Source.List(ctx)
	if err != nil {
		if errors.Is(err, ErrNotListable) {
			return nil, nil, err
		}
		return nil, nil, pathError(c.Source.Path("."), err)
	}
	entries, _ = preferDefault(entries)
	stems := ggufStems(entries)
	seen := map[string]bool{}
	for _, e := range entries {
		if !IsWeightFile(e.Name) {
			continue
		}
		v := shardVariant(e.Name)
		if s, ok := stems[e.Name]; ok {
			v = s
		}
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

// ofIndexedFormat keeps the names of the format of the index's shards
// (pytorch_model.bin.index.json given in a folder that also holds
// safetensors shards is over the .bin files), all when its name says none.
func ofIndexedFormat(names []string, index string) []string {
	f := indexedFormat(index)
	if f == nil {
		return names
	}
	return slices.DeleteFunc(names, func(n string) bool {
		g, _ := tensorfile.ByFileName(n)
		return g != f
	})
}

// chooseFiles picks, in a directory, the index and shards of the variant
// asked for (the plain one by default, or the only one there is).
func (c *Checkpoint) chooseFiles(ctx context.Context, variant string, anyVariant bool) (index string, names []string, err error) {
	entries, err := c.Source.List(ctx)
	if err != nil {
		return "", nil, pathError(c.Source.Path("."), err)
	}
	entries, c.Superseded = preferDefault(entries)
	indexes, otherIndexes := listIndexes(entries) // variant -> index name
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
	stems := ggufStems(entries)
	if variant, err = matchGGUFVariant(c.Path, variant, stems); err != nil {
		return "", nil, err
	}
	if variant == "" && !slices.Contains(variants, "") && len(variants) > 1 && (len(stems) > 0 || len(otherIndexes) == 0) {
		// Several checkpoints and no plain one to read by default.
		return "", nil, &VariantsError{Path: c.Path, Variants: variants, stems: stems}
	}
	if variant == "" && !slices.Contains(variants, "") && len(variants) == 1 {
		variant = variants[0] // only a variant: that is the checkpoint
	}
	if anyVariant && len(variants) == 1 {
		variant = variants[0] // no choice to make
	}
	if variant != "" && !slices.Contains(variants, variant) {
		here := listOrNone(VariantNames(variants))
		if len(stems) > 0 {
			here = describeGGUFVariants(variants, stems)
		}
		return "", nil, fmt.Errorf("%s: no %s variant (variants here: %s)", c.Path, variant, here)
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
		return "", nil, fmt.Errorf("%s: no %s files and no index", c.Path, orList(globs(tensorExts())))
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
