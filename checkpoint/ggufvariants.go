package checkpoint

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/ckptcheck/ckptcheck/gguf"
	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// A folder of GGUF files (a Hub repo with model-Q4_K_M.gguf beside
// model-Q8_0.gguf) holds one checkpoint per quantization: each file, or
// each set of gguf-split files (model-Q8_0-00001-of-00002.gguf …), is a
// variant named by its stem. --variant picks one by that stem, by its
// quantization tag (Q8_0, case-insensitive) or by a file's name.

var (
	// ggufSplitSuffix ends the stem of a gguf-split file (gguf-split.cpp
	// writes %05d-of-%05d).
	ggufSplitSuffix = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`-\d+-of-\d+$`) })
	// ggufQuantTag matches llama.cpp's names of file types as llama-quantize
	// and convert_hf_to_gguf.py put them in file names: F16, BF16, Q8_0,
	// Q4_K_M, IQ4_XS, TQ1_0, MXFP4_MOE.
	ggufQuantTag = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)^(?:b?f\d+|i?q\d+(?:_[a-z0-9]+)*|tq\d+_\d+|mxfp4(?:_moe)?)$`)
	})
)

// ggufStems maps each GGUF file of a listing to its variant, its stem less
// any split suffix, when the folder holds GGUF files of several stems; nil
// when it holds one (a file, or one set of splits), which is then the
// folder's plain checkpoint as before.
func ggufStems(entries []Entry) map[string]string {
	stems := map[string]string{}
	distinct := map[string]bool{}
	for _, e := range entries {
		if s, ok := ggufStem(e.Name); ok {
			stems[e.Name] = s
			distinct[s] = true
		}
	}
	if len(distinct) < 2 {
		return nil
	}
	return stems
}

// ggufStem is a GGUF file name's stem less its split suffix
// (model-Q8_0-00001-of-00002.gguf: model-Q8_0).
func ggufStem(name string) (string, bool) {
	f, ok := tensorfile.ByFileName(name)
	if !ok || f.Name() != gguf.Name {
		return "", false
	}
	return ggufSplitSuffix().ReplaceAllString(strings.TrimSuffix(name, tensorExt(name)), ""), true
}

// ggufQuantization is the quantization tag ending a stem (Q4_K_M of
// Qwen3-8B-Q4_K_M, of llama-2-7b.Q4_K_M and of UD-Q4_K_M), "" when the
// stem ends in none.
func ggufQuantization(stem string) string {
	tag := stem[strings.LastIndexAny(stem, "-.")+1:]
	if ggufQuantTag().MatchString(tag) {
		return tag
	}
	return ""
}

// matchGGUFVariant resolves a --variant against a folder's GGUF stems: a
// stem exactly, else the stem whose quantization tag or stem is asked
// (case-insensitive), or that a file asked by name is of. It returns asked
// unchanged when nothing matches, so the caller's "no such variant" error
// lists the variants.
func matchGGUFVariant(path, asked string, stems map[string]string) (string, error) {
	if asked == "" || len(stems) == 0 {
		return asked, nil
	}
	if s, ok := stems[asked]; ok {
		return s, nil
	}
	var hits []string
	for _, s := range stems {
		if (strings.EqualFold(s, asked) || strings.EqualFold(ggufQuantization(s), asked)) && !slices.Contains(hits, s) {
			hits = append(hits, s)
		}
	}
	slices.Sort(hits)
	switch len(hits) {
	case 0:
		return asked, nil
	case 1:
		return hits[0], nil
	}
	if slices.Contains(hits, asked) {
		return asked, nil
	}
	return "", fmt.Errorf("%s: --variant %s matches several GGUF checkpoints, give a file name: %s", path, asked, describeGGUFVariants(hits, stems))
}

// A VariantsError is the error of a folder of several checkpoints and no
// plain one, opened without Options.Variant: GGUF files of several
// quantizations, or model.fp16.safetensors beside model.fp32.safetensors.
// A command that can take them all (validate, inspect) opens each of
// Variants in turn; the others stop with it and its list.
type VariantsError struct {
	Path string
	// Variants are the folder's checkpoints, sorted, each a valid
	// Options.Variant.
	Variants []string
	stems    map[string]string // the GGUF files' variants, nil when none
}

func (e *VariantsError) Error() string {
	if len(e.stems) == 0 {
		return fmt.Sprintf("%s: holds %d checkpoints, one per variant, and no plain one: choose one with --variant (%s)", e.Path, len(e.Variants), strings.Join(e.Variants, ", "))
	}
	return fmt.Sprintf("%s: holds %d GGUF checkpoints, one per quantization: choose one with --variant (%s)", e.Path, len(e.Variants), describeGGUFVariants(e.Variants, e.stems))
}

// describeGGUFVariants writes variants for messages: each by its
// quantization tag and first file ("Q8_0: model-Q8_0.gguf").
func describeGGUFVariants(variants []string, stems map[string]string) string {
	out := make([]string, 0, len(variants))
	for _, v := range variants {
		var files []string
		for name, s := range stems {
			if s == v {
				files = append(files, name)
			}
		}
		if len(files) == 0 { // a variant of another format
			out = append(out, VariantNames([]string{v})[0])
			continue
		}
		slices.Sort(files)
		d := files[0]
		if len(files) > 1 {
			d = fmt.Sprintf("%s … (%d files)", files[0], len(files))
		}
		if q := ggufQuantization(v); q != "" {
			d = q + ": " + d
		}
		out = append(out, d)
	}
	return strings.Join(out, ", ")
}
