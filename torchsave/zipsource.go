package torchsave

import (
	"io"
	"sync"
)

// A directReader reads scattered small ranges without the read-ahead a
// sequential reader gets: a remote file (checkpoint/remote's File) makes
// each such read one ranged request for just its bytes. Opening an
// archive reads each storage's local header, spread through the file; read
// ahead, they would fetch the storages between them.
type directReader interface {
	ReadAtDirect(p []byte, off int64) (int, error)
}

// zipTail is how much of an archive's end is read at once for its
// directory: the end record and, for archives of up to a few hundred
// entries, the whole central directory, which archive/zip otherwise reads
// a few KiB at a time.
const zipTail = 64 << 10

// zipSource is what archive/zip reads an archive through while it is
// opened, when the file offers direct reads: the archive's tail, read
// once, and every other range read directly. A local file is read as is.
type zipSource struct {
	r    directReader
	size int64

	once    sync.Once
	tail    []byte
	tailErr error
}

func newZipSource(r io.ReaderAt, size int64) io.ReaderAt {
	d, ok := r.(directReader)
	if !ok {
		return r
	}
	return &zipSource{r: d, size: size}
}

func (z *zipSource) ReadAt(p []byte, off int64) (int, error) {
	start := z.size - min(z.size, zipTail)
	if off >= start && off < z.size {
		z.once.Do(func() {
			b := make([]byte, z.size-start)
			n, err := z.r.ReadAtDirect(b, start)
			if n == len(b) {
				err = nil
			}
			z.tail, z.tailErr = b[:n], err
		})
		if z.tailErr != nil {
			return 0, z.tailErr
		}
		n := copy(p, z.tail[off-start:])
		if n < len(p) {
			return n, io.EOF
		}
		return n, nil
	}
	return z.r.ReadAtDirect(p, off)
}
