package tensorfile

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
)

// registry is copied on write: lookups, which happen per file, take no lock.
type registry struct {
	formats []Format
	byExt   map[string]Format
}

var (
	regMu sync.Mutex
	reg   atomic.Pointer[registry]
)

// Register makes a format known to Lookup, ByFileName, Detect and Identify.
// Format packages call it from init. Registering a name or an extension
// twice is a programming error and panics, as sql.Register does.
func Register(f Format) {
	regMu.Lock()
	defer regMu.Unlock()
	old := reg.Load()
	next := &registry{byExt: map[string]Format{}}
	if old != nil {
		next.formats = append(next.formats, old.formats...)
		for k, v := range old.byExt {
			next.byExt[k] = v
		}
	}
	for _, g := range next.formats {
		if g.Name() == f.Name() {
			panic(fmt.Sprintf("tensorfile: format %q registered twice", f.Name()))
		}
	}
	for _, ext := range f.Extensions() {
		if g, ok := next.byExt[ext]; ok {
			panic(fmt.Sprintf("tensorfile: extension %q of format %q is already format %q's", ext, f.Name(), g.Name()))
		}
		next.byExt[ext] = f
	}
	next.formats = append(next.formats, f)
	reg.Store(next)
}

func current() *registry {
	if r := reg.Load(); r != nil {
		return r
	}
	return &registry{}
}

// Formats lists the registered formats in registration order.
func Formats() []Format { return append([]Format(nil), current().formats...) }

// Lookup returns the format registered under name.
func Lookup(name string) (Format, bool) {
	for _, f := range current().formats {
		if f.Name() == name {
			return f, true
		}
	}
	return nil, false
}

// ByFileName returns the format a file name says its file is, by its
// suffix: "model-00001-of-00002.safetensors" is safetensors. The name may
// be a path or a URL path; only its ending is looked at.
func ByFileName(name string) (Format, bool) {
	r := current()
	for i := strings.LastIndexByte(name, '.'); i >= 0; i = strings.LastIndexByte(name[:i], '.') {
		if f, ok := r.byExt[name[i:]]; ok {
			return f, true
		}
		if strings.ContainsAny(name[i:], "/\\") {
			break
		}
	}
	return nil, false
}

// Detect returns the first registered format, in registration order, whose
// Sniff accepts a file of size bytes starting with prefix.
func Detect(prefix []byte, size int64) (Format, bool) {
	for _, f := range current().formats {
		if f.Sniff(prefix, size) {
			return f, true
		}
	}
	return nil, false
}

// Identify is the rule for choosing a file's format: the format its name
// says (ByFileName), whatever its bytes; otherwise the format its first
// bytes say (Detect); otherwise ErrUnknownFormat. prefix is the file's first
// min(size, SniffLen) bytes; it is not needed, and may be nil, when the name
// decides.
func Identify(name string, prefix []byte, size int64) (Format, error) {
	if f, ok := ByFileName(name); ok {
		return f, nil
	}
	if f, ok := Detect(prefix, size); ok {
		return f, nil
	}
	return nil, fmt.Errorf("%s: %w", name, ErrUnknownFormat)
}

// Open identifies the format of the file name, which r reads and which is
// size bytes long, and opens it: the name decides when it can, else the
// first SniffLen bytes. Errors carry the name.
func Open(name string, r io.ReaderAt, size int64) (File, Format, error) {
	f, ok := ByFileName(name)
	if !ok {
		prefix := make([]byte, min(max(size, 0), SniffLen))
		if n, err := r.ReadAt(prefix, 0); n < len(prefix) {
			if err == nil || err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, nil, fmt.Errorf("%s: %w", name, err)
		}
		if f, ok = Detect(prefix, size); !ok {
			return nil, nil, fmt.Errorf("%s: %w", name, ErrUnknownFormat)
		}
	}
	file, err := f.Open(r, size)
	if err != nil {
		return nil, f, fmt.Errorf("%s: %w", name, err)
	}
	return file, f, nil
}
