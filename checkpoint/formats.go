package checkpoint

import (
	"slices"
	"strings"

	_ "github.com/ckptcheck/ckptcheck/gguf" // .gguf files: one file, one checkpoint
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
// no NUL byte.
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
