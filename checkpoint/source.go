package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// A Source is where a checkpoint's files come from: a local directory
// (Dir), or a remote store registered by URL scheme (see RegisterScheme;
// such a source is a RemoteSource). Names are relative to the checkpoint's
// root, slash-separated.
type Source interface {
	// Open opens a file for reading. A file that does not exist is an error
	// satisfying errors.Is(err, fs.ErrNotExist).
	Open(ctx context.Context, name string) (File, error)
	// List names the entries at the root: regular files, and (Dangling)
	// symlinks that point at nothing. A source that cannot list, such as
	// plain HTTP, returns ErrNotListable.
	List(ctx context.Context) ([]Entry, error)
	// Path is how a file is named in reports.
	Path(name string) string
}

// An Entry is a file a Source lists.
type Entry struct {
	Name string
	// Dangling is a symlink that points at nothing: in a hub cache, a
	// download that did not finish.
	Dangling bool
}

// ErrNotListable is returned by a Source that cannot list its files.
var ErrNotListable = errors.New("the source cannot list its files")

// A File is an open file of a Source.
type File interface {
	io.ReaderAt
	io.Closer
	// Size is the file's length when it was opened.
	Size() int64
	// Unchanged reports an error if the file changed since it was opened
	// (a trainer still writing it): its size or modification time moved.
	Unchanged() error
}

// A Versioned File says which version of its contents it holds, for telling
// whether two runs read the same file: a local file its modification time,
// a remote object its ETag or commit. Files that cannot say need not
// implement it.
type Versioned interface {
	Version() string
}

// ErrChanged is wrapped by File.Unchanged when a file changed.
var ErrChanged = errors.New("input changed during the run")

// Dir is a Source over a local directory.
type Dir string

// Path joins the directory and name.
func (d Dir) Path(name string) string { return filepath.Join(string(d), filepath.FromSlash(name)) }

// Open opens a regular file (or a symlink to one) read-only. A FIFO or a
// device is refused before it is opened: it would block or never end.
func (d Dir) Open(ctx context.Context, name string) (File, error) {
	return openLocal(d.Path(name))
}

// List lists the regular files and dangling symlinks in the directory.
func (d Dir) List(ctx context.Context) ([]Entry, error) {
	entries, err := os.ReadDir(string(d))
	if err != nil {
		return nil, err
	}
	var out []Entry
	for _, e := range entries {
		switch {
		case e.Type().IsRegular():
			out = append(out, Entry{Name: e.Name()})
		case e.Type()&fs.ModeSymlink != 0:
			st, err := os.Stat(d.Path(e.Name()))
			switch {
			case errors.Is(err, fs.ErrNotExist):
				out = append(out, Entry{Name: e.Name(), Dangling: true})
			case err != nil || !st.IsDir():
				// A loop or an unreadable link is listed, so that opening
				// it reports why.
				out = append(out, Entry{Name: e.Name()})
			}
		case !e.IsDir():
			out = append(out, Entry{Name: e.Name()}) // a FIFO or device: Open refuses it by name
		}
	}
	return out, nil
}

// localFile is an open local file and what it looked like when opened.
type localFile struct {
	*os.File
	size  int64
	mtime time.Time
}

func (f *localFile) Size() int64 { return f.size }

// ReadAt reads as os.File does. An error names the file and the read's
// offset in it, and a read that ends before the size the file had when it
// was opened is ErrChanged: the file was truncated during the run.
func (f *localFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.File.ReadAt(p, off)
	if err == nil || (err == io.EOF && off+int64(n) >= f.size) {
		return n, err
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	if err == io.EOF {
		err = fmt.Errorf("%w: the file ends at byte %d, it had %d bytes when opened", ErrChanged, off+int64(n), f.size)
	}
	return n, fmt.Errorf("%s: reading %d bytes at byte %d: %w", f.Name(), len(p), off, err)
}

func (f *localFile) Unchanged() error {
	st, err := f.File.Stat()
	if err != nil {
		return err
	}
	if st.Size() != f.size || !st.ModTime().Equal(f.mtime) {
		return fmt.Errorf("%s: %w (size %d → %d, modified %s)", f.Name(), ErrChanged, f.size, st.Size(), st.ModTime().Format(time.RFC3339))
	}
	return nil
}

// Version is the modification time, to the nanosecond the file system keeps.
func (f *localFile) Version() string { return "mtime " + f.mtime.UTC().Format(time.RFC3339Nano) }

func openLocal(path string) (*localFile, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		what := "not a regular file"
		switch {
		case st.IsDir():
			what = "a directory"
		case st.Mode()&fs.ModeNamedPipe != 0:
			what = "a FIFO, not a regular file"
		case st.Mode()&fs.ModeDevice != 0:
			what = "a device, not a regular file"
		}
		return nil, &fs.PathError{Op: "open", Path: path, Err: errors.New(what)}
	}
	fh, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	st, err = fh.Stat()
	if err != nil {
		fh.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() { // replaced between the two looks
		fh.Close()
		return nil, &fs.PathError{Op: "open", Path: path, Err: errors.New("not a regular file")}
	}
	return &localFile{File: fh, size: st.Size(), mtime: st.ModTime()}, nil
}

// readSmall reads a small file of src whole (index.json, config.json),
// refusing files over limit before reading them.
func readSmall(ctx context.Context, src Source, name string, limit int64) ([]byte, error) {
	f, err := src.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if f.Size() > limit {
		return nil, fmt.Errorf("%s: %w: %d bytes, more than the %d read for a JSON file", src.Path(name), errTooLarge, f.Size(), limit)
	}
	b := make([]byte, f.Size()) // bounded above
	n, err := f.ReadAt(b, 0)
	if n == len(b) {
		return b, nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return nil, fmt.Errorf("%s: %w", src.Path(name), err)
}
