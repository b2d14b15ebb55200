package torchsave

import (
	"encoding/binary"
	"errors"
	"io"
	"slices"

	"github.com/ckptcheck/ckptcheck/internal/pickle"
)

// legacyMagic is the first pickle of a file torch.save wrote before 1.6
// (_use_new_zipfile_serialization=False): the magic number
// 0x1950a86a20f9469cfc6c as a protocol 2 LONG1.
var legacyMagic = []byte("\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19.")

// legacyProtocol is the protocol version torch writes after the magic.
const legacyProtocol = 1001

const legacyEntry = "legacy pickle"

// newLegacy reads the legacy format: five pickles (magic number, protocol
// version, system info, the object, the storage keys in order), then each
// storage as a little-endian int64 element count and its bytes.
func newLegacy(r io.ReaderAt, size int64) (*File, error) {
	pr := &pickleReader{r: r, size: size, pos: int64(len(legacyMagic))}
	v, err := pr.next(nil)
	if err != nil {
		return nil, err
	}
	if v != int64(legacyProtocol) {
		return nil, formatErr(BadPickle, legacyEntry, "", "protocol version %v, not %d", v, legacyProtocol)
	}
	sys, err := pr.next(nil)
	if err != nil {
		return nil, err
	}
	if d, ok := sys.(*pickle.Dict); ok {
		if le, ok := d.Get("little_endian"); ok && le == false {
			return nil, formatErr(BigEndian, legacyEntry, "", "written on a big-endian machine; only little-endian files are read")
		}
	}
	var views []view
	var meta map[string]string
	if _, err := pr.next(func(b []byte) (int, error) {
		var n int
		var err error
		views, meta, n, err = unpickle(legacyEntry, b)
		return n, err
	}); err != nil {
		return nil, err
	}
	keysV, err := pr.next(nil)
	if err != nil {
		return nil, err
	}
	kl, ok := keysV.(*pickle.List)
	if !ok {
		return nil, formatErr(BadPickle, legacyEntry, "", "the storage keys are a %T, not a list", keysV)
	}
	// Each storage's element size is its tensors' dtype's.
	refs := map[string]storageRef{}
	for _, v := range views {
		if v.err == nil {
			refs[v.key] = v.storage
		}
	}
	type placed struct{ off, size int64 }
	storages := map[string]placed{}
	pos := pr.pos
	for _, k := range kl.Items {
		key, ok := k.(string)
		if !ok {
			return nil, formatErr(BadPickle, legacyEntry, "", "a storage key is a %T", k)
		}
		var buf [8]byte
		if pos > size-8 {
			return nil, formatErr(StorageOutOfRange, "storage "+key, "", "the file ends before the storage's element count")
		}
		if _, err := r.ReadAt(buf[:], pos); err != nil {
			return nil, err
		}
		numel := binary.LittleEndian.Uint64(buf[:])
		ref, ok := refs[key]
		if !ok {
			return nil, formatErr(BadPickle, "storage "+key, "", "no tensor of the pickle is a view of it, so its element size is unknown")
		}
		n := ref.dtype.Bytes(numel)
		if n > uint64(size-pos-8) {
			return nil, formatErr(StorageOutOfRange, "storage "+key, "", "%d elements, more than the file's %d bytes left", numel, size-pos-8)
		}
		if numel != ref.numel {
			return nil, formatErr(StorageOutOfRange, "storage "+key, "", "%d elements, the pickle says %d", numel, ref.numel)
		}
		storages[key] = placed{off: pos + 8, size: int64(n)}
		pos += 8 + int64(n)
	}
	f := &File{Legacy: true, Metadata: meta}
	budget := maxFilePieces
	for _, v := range views {
		t := Tensor{Storage: v.key, StorageOffset: v.offset, Stride: v.stride}
		p, ok := storages[v.key]
		if !ok && v.err == nil {
			v.err = formatErr(BadArchive, "storage "+v.key, v.name, "the storage is not in the file's list of storages")
		}
		place(&t, v, p.off, p.size, "storage "+v.key, &budget)
		f.Tensors = append(f.Tensors, t)
	}
	return f, nil
}

// pickleReader reads the pickles at the start of a file one after
// another, reading more of the file only while a pickle needs it (doubling,
// up to MaxPickleSize), so that a small file is read once and the storages
// after the pickles are not read.
type pickleReader struct {
	r    io.ReaderAt
	size int64
	pos  int64
	buf  []byte // the file's bytes from bufAt
	at   int64
}

// next runs the pickle at pos with load (nil: plain pickle.Load under
// Allowed) and moves past it. It returns the plain load's value.
func (p *pickleReader) next(load func([]byte) (int, error)) (pickle.Value, error) {
	var val pickle.Value
	if load == nil {
		load = func(b []byte) (int, error) {
			v, n, err := pickle.Load(b, Allowed, pickle.Limits{})
			if err != nil {
				return 0, pickleErr(legacyEntry, err)
			}
			val = v
			return n, nil
		}
	}
	want := int64(64 << 10)
	for {
		b, full, err := p.window(want)
		if err != nil {
			return nil, err
		}
		n, err := load(b)
		if err == nil {
			p.pos += int64(n)
			return val, nil
		}
		if full || !errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, err
		}
		want *= 2
	}
}

// window returns up to want bytes from pos; full is set when they reach the
// end of the file or MaxPickleSize, so that reading more cannot help.
func (p *pickleReader) window(want int64) ([]byte, bool, error) {
	end := min(p.pos+want, p.size, p.pos+MaxPickleSize)
	full := end == p.size || end == p.pos+MaxPickleSize
	if p.pos < p.at || end > p.at+int64(len(p.buf)) {
		buf := make([]byte, end-p.pos)
		if n, err := p.r.ReadAt(buf, p.pos); n < len(buf) {
			if err == nil || err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, false, err
		}
		p.buf, p.at = buf, p.pos
	}
	return slices.Clip(p.buf[p.pos-p.at : end-p.at]), full, nil
}
