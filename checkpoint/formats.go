package checkpoint

import (
	"slices"
	"strings"

	"github.com/ckptcheck/ckptcheck/safetensors"
	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// Which files hold tensors is the tensorfile registry's to say: a file is
// a tensor file when a registered format claims its name by extension.
// Nothing in this package names a format's extension.

// IsTensorFile reports whether a registered format claims the file name
// by its extension ("model-00001-of-00002.safetensors"): what a directory
// listing's shards and an index's entries must be.
func IsTensorFile(name string) bool {
	_, ok := tensorfile.ByFileName(name)
	return ok
}

// tensorExt is the registered extension that name ends with (the longest,
// when several do), or "".
func tensorExt(name string) string {
	f, ok := tensorfile.ByFileName(name)
	if !ok {
		return ""
	}
	ext := ""
	for _, e := range f.Extensions() {
		if strings.HasSuffix(name, e) && len(e) > len(ext) {
			ext = e
		}
	}
	return ext
}

// tensorExts lists every registered extension, sorted.
func tensorExts() []string {
	var exts []string
	for _, f := range tensorfile.Formats() {
		exts = append(exts, f.Extensions()...)
	}
	slices.Sort(exts)
	return exts
}

// UnsafeName says why a shard name from an index must not be opened, or "":
// it must name a file of a registered format (IsTensorFile) inside the
// checkpoint's directory. The path rules hold on every OS, whatever the
// format: no absolute path (/, \, a drive letter, a UNC path), no "..",
// no backslash, no NUL byte.
func UnsafeName(name string) string { return unsafeName(name, IsTensorFile, tensorExts) }

// unsafeName is UnsafeName over a given set of formats, so that tests can
// try formats that are not registered.
func unsafeName(name string, isTensorFile func(string) bool, exts func() []string) string {
	if reason := UnsafePath(name); reason != "" {
		return reason
	}
	if !isTensorFile(name) {
		return "is not a " + orList(exts()) + " file"
	}
	return ""
}

// UnsafePath says why a slash-separated path from a checkpoint's files (an
// index entry, a folder in a repository) must not be followed, or "": it
// must stay inside the checkpoint's directory, on every OS.
func UnsafePath(name string) string {
	switch {
	case name == "":
		return "is empty"
	case strings.HasPrefix(name, "/") || strings.HasPrefix(name, `\`) || (len(name) > 1 && name[1] == ':'):
		return "is an absolute path"
	case slices.Contains(strings.FieldsFunc(name, func(r rune) bool { return r == '/' || r == '\\' }), ".."):
		return "leaves the checkpoint directory"
	case strings.ContainsRune(name, '\\'):
		// A backslash is a separator on Windows and a name byte elsewhere:
		// one file would name different paths on different machines.
		return "contains a backslash (paths in a checkpoint are slash-separated)"
	case strings.ContainsRune(name, 0):
		return "contains a NUL byte"
	}
	return ""
}

// orList writes names as "a", "a or b", "a, b or c"; none is "tensor".
func orList(names []string) string {
	switch len(names) {
	case 0:
		return "tensor"
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// globs writes extensions as file patterns: ".safetensors" is "*.safetensors".
func globs(exts []string) []string {
	out := make([]string, len(exts))
	for i, e := range exts {
		out[i] = "*" + e
	}
	return out
}

// A FolderFormat is a format whose files in a folder are not all weights:
// of a folder's files only those WeightFile accepts are read (torchsave's
// pytorch_model*.bin, not a trainer's training_args.bin or optimizer.pt).
// A file named as the checkpoint's path is read whatever its name.
type FolderFormat interface {
	tensorfile.Format
	WeightFile(name string) bool
}

// IsWeightFile reports whether a file of a folder listing holds weights: a
// registered format claims it (IsTensorFile) and, for a FolderFormat,
// accepts its name as a weight file's.
func IsWeightFile(name string) bool {
	f, ok := tensorfile.ByFileName(name)
	if !ok {
		return false
	}
	if ff, ok := f.(FolderFormat); ok {
		return ff.WeightFile(name)
	}
	return true
}

// indexedFormat is the format of the shards an index file's name says it
// is over (model.safetensors.index.json, model.safetensors.index.fp16.json,
// pytorch_model.bin.index.json), nil when it says none.
func indexedFormat(index string) tensorfile.Format {
	name := strings.TrimSuffix(index, hfIndexSuffix)
	if m := variantIndex().FindStringSubmatch(index); m != nil {
		name = m[1] + m[2]
	}
	if name == index || !IsWeightFile(name) {
		return nil
	}
	f, _ := tensorfile.ByFileName(name)
	return f
}

// preferDefault keeps, of a folder's entries, those that are no weights or
// index of any format, and the weights and indexes of one format: the
// default format (safetensors) when the folder holds it, as transformers
// loads model.safetensors before pytorch_model.bin. superseded lists the
// weights and indexes of the other formats, which are not read.
func preferDefault(entries []Entry) (kept []Entry, superseded []string) {
	formatOf := func(name string) tensorfile.Format {
		if IsWeightFile(name) {
			f, _ := tensorfile.ByFileName(name)
			return f
		}
		return indexedFormat(name)
	}
	hasDefault := slices.ContainsFunc(entries, func(e Entry) bool {
		f := formatOf(e.Name)
		return f != nil && f.Name() == safetensors.Name
	})
	if !hasDefault {
		return entries, nil
	}
	for _, e := range entries {
		if f := formatOf(e.Name); f != nil && f.Name() != safetensors.Name {
			superseded = append(superseded, e.Name)
			continue
		}
		kept = append(kept, e)
	}
	slices.Sort(superseded)
	return kept, superseded
}
