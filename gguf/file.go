package gguf

import (
	"io"
	"math"
	"math/bits"
	"os"
	"strconv"
	"sync"

	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// Magic is the first four bytes of every GGUF file.
const Magic = "GGUF"

// DefaultAlignment is the data alignment of a file without general.alignment.
const DefaultAlignment = 32

// MaxAlignment bounds general.alignment: ggml takes any power of two, but
// writers use 32 or 64, and a huge one would only pad the file.
const MaxAlignment = 1 << 20

// AlignmentKey is the metadata key of the data alignment.
const AlignmentKey = "general.alignment"

// maxDims and maxNameLen are ggml's GGML_MAX_DIMS and GGML_MAX_NAME.
const (
	maxDims    = 4
	maxNameLen = 64
)

// Smallest sizes of a key/value pair (key length, type, one byte of value)
// and of a tensor info (name length, dimension count, type, offset): what
// bounds the header's counts by the file's size.
const (
	minKVSize     = 8 + 4 + 1
	minTensorSize = 8 + 4 + 4 + 8
)

// TensorInfo is a tensor's entry in the header.
type TensorInfo struct {
	Name string
	// Dims are the dimensions in GGML order: Dims[0] is the length of a
	// row (ne[0]). Shape is the row-major order every other package uses.
	Dims []uint64
	Type Type
	// Offset is the tensor's offset from the start of the data section.
	Offset uint64
	// Size is the tensor's length in bytes, from its dims and type.
	Size uint64

	shape []uint64
}

// Shape is the row-major shape: Dims reversed. It shares memory with the
// file: do not modify it.
func (t *TensorInfo) Shape() []uint64 { return t.shape }

// A File is an open GGUF file: its parsed header. Only the header is read
// when the file is opened; tensors' bytes are read through the io.ReaderAt
// at DataOffset + Offset.
type File struct {
	Version   uint32
	Size      int64 // the whole file's length
	Alignment uint64
	// DataOffset is where the data section starts: the end of the header
	// padded to Alignment.
	DataOffset int64
	KV         []KV // in file order
	Tensors    []TensorInfo
	// HeaderReads is how many ReadAt calls reading the header took.
	HeaderReads int

	r       io.ReaderAt
	closer  io.Closer
	kvIndex map[string]int

	metaOnce sync.Once
	meta     map[string]string
}

// Open opens the named file and reads its header.
func Open(name string) (*File, error) {
	fh, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	st, err := fh.Stat()
	if err != nil {
		fh.Close()
		return nil, err
	}
	f, err := NewFile(fh, st.Size())
	if err != nil {
		fh.Close()
		return nil, err
	}
	f.closer = fh
	return f, nil
}

// Close closes the file Open opened; it does nothing for NewFile's.
func (f *File) Close() error {
	if f.closer == nil {
		return nil
	}
	return f.closer.Close()
}

// Lookup returns the value of a metadata key.
func (f *File) Lookup(key string) (Value, bool) {
	i, ok := f.kvIndex[key]
	if !ok {
		return Value{}, false
	}
	return f.KV[i].Value, true
}

// Architecture is general.architecture, or "".
func (f *File) Architecture() string {
	v, _ := f.Lookup("general.architecture")
	s, _ := v.Str()
	return s
}

// TensorReader returns a reader over tensor i's bytes.
func (f *File) TensorReader(i int) *io.SectionReader {
	t := &f.Tensors[i]
	return io.NewSectionReader(f.r, f.DataOffset+int64(t.Offset), int64(t.Size))
}

// NewFile reads a GGUF header from r, which is size bytes long. The file
// is nil whenever the error is not; the error is a *FormatError, or the
// read error wrapped in one of kind Truncated.
func NewFile(r io.ReaderAt, size int64) (*File, error) {
	f, ferr := parse(r, size)
	if ferr != nil {
		return nil, ferr
	}
	return f, nil
}

func parse(r io.ReaderAt, size int64) (*File, *FormatError) {
	w := &window{r: r, size: max(size, 0)}
	magic, err := w.bytes(4, "the magic")
	if err != nil {
		return nil, err
	}
	if string(magic) != Magic {
		return nil, &FormatError{Kind: BadMagic, Offset: 0, Msg: "the file starts with " + strconv.Quote(string(magic)) + ", not \"GGUF\""}
	}
	version, err := w.u32("the version")
	if err != nil {
		return nil, err
	}
	switch {
	case version&0xFFFF == 0 && version != 0:
		return nil, &FormatError{Kind: BadVersion, Offset: 4, Msg: "version " + itoa(uint64(version)) + " reads as version " + itoa(uint64(bits.ReverseBytes32(version))) + " byte-swapped: a big-endian file, which this reader does not read"}
	case version != 2 && version != 3:
		return nil, &FormatError{Kind: BadVersion, Offset: 4, Msg: "version " + itoa(uint64(version)) + ", want 3 (or 2)"}
	}
	nTensors, err := w.u64("the tensor count")
	if err != nil {
		return nil, err
	}
	nKV, err := w.u64("the key/value count")
	if err != nil {
		return nil, err
	}
	if nTensors > w.remain()/minTensorSize {
		return nil, &FormatError{Kind: TooLarge, Offset: 8, Msg: itoa(nTensors) + " tensors do not fit in the " + itoa(w.remain()) + " bytes left in the file"}
	}
	if nKV > (w.remain()-nTensors*minTensorSize)/minKVSize {
		return nil, &FormatError{Kind: TooLarge, Offset: 16, Msg: itoa(nKV) + " key/value pairs and " + itoa(nTensors) + " tensors do not fit in the " + itoa(w.remain()) + " bytes left in the file"}
	}
	f := &File{Version: version, Size: size, r: r, Alignment: DefaultAlignment,
		KV: make([]KV, 0, nKV), kvIndex: make(map[string]int, nKV), Tensors: make([]TensorInfo, 0, nTensors)}
	for range nKV {
		at := w.pos
		key, err := w.str("a key")
		if err != nil {
			return nil, err
		}
		if _, dup := f.kvIndex[key]; dup {
			return nil, &FormatError{Kind: Duplicate, Offset: at, Key: key, Msg: "the key is given twice"}
		}
		t, err := w.u32("a value type")
		if err != nil {
			return nil, err
		}
		v, err := w.value(ValueType(t), 0)
		if err != nil {
			err.Key = key
			return nil, err
		}
		f.kvIndex[key] = len(f.KV)
		f.KV = append(f.KV, KV{Key: key, Value: v})
	}
	if v, ok := f.Lookup(AlignmentKey); ok {
		a, _ := v.Uint()
		if v.Type != ValueUint32 || a == 0 || a&(a-1) != 0 || a > MaxAlignment {
			return nil, &FormatError{Kind: BadAlignment, Offset: -1, Key: AlignmentKey, Msg: "alignment " + v.String() + " (" + v.Type.String() + ") is not a u32 power of two up to " + itoa(MaxAlignment)}
		}
		f.Alignment = a
	}
	names := make(map[string]struct{}, nTensors)
	for range nTensors {
		t, err := w.tensorInfo()
		if err != nil {
			return nil, err
		}
		if _, dup := names[t.Name]; dup {
			return nil, &FormatError{Kind: Duplicate, Offset: -1, Tensor: t.Name, Msg: "the tensor name is given twice"}
		}
		names[t.Name] = struct{}{}
		f.Tensors = append(f.Tensors, t)
	}
	f.HeaderReads = w.reads
	return f, f.layData(w.pos)
}

// tensorInfo reads one tensor info with ggml's checks.
func (w *window) tensorInfo() (TensorInfo, *FormatError) {
	at := w.pos
	name, err := w.str("a tensor name")
	if err != nil {
		return TensorInfo{}, err
	}
	if len(name) >= maxNameLen {
		return TensorInfo{}, &FormatError{Kind: BadName, Offset: at, Tensor: name, Msg: "a name of " + itoa(uint64(len(name))) + " bytes: ggml takes at most 63"}
	}
	fail := func(err *FormatError) (TensorInfo, *FormatError) { err.Tensor = name; return TensorInfo{}, err }
	n, err := w.u32("a dimension count")
	if err != nil {
		return fail(err)
	}
	if n > maxDims {
		return fail(&FormatError{Kind: BadSize, Offset: w.pos - 4, Msg: itoa(uint64(n)) + " dimensions, ggml takes at most 4"})
	}
	t := TensorInfo{Name: name, Dims: make([]uint64, n), shape: make([]uint64, n)}
	elems := uint64(1)
	for i := range t.Dims {
		d, err := w.u64("a dimension")
		if err != nil {
			return fail(err)
		}
		hi, lo := bits.Mul64(elems, d)
		if d > math.MaxInt64 || hi != 0 || lo > math.MaxInt64-1 {
			return fail(&FormatError{Kind: BadSize, Offset: w.pos - 8, Msg: "dimensions " + tensorfile.FormatShape(t.Dims[:i+1]) + " overflow an int64 element count"})
		}
		t.Dims[i], t.shape[len(t.shape)-1-i], elems = d, d, lo
	}
	typ, err := w.u32("a tensor type")
	if err != nil {
		return fail(err)
	}
	t.Type = Type(typ)
	if !t.Type.Known() {
		return fail(&FormatError{Kind: BadType, Offset: w.pos - 4, Msg: "unknown GGML type " + itoa(uint64(typ))})
	}
	block := t.Type.Block()
	row := uint64(1)
	if len(t.Dims) > 0 {
		row = t.Dims[0]
	}
	size, ok := block.Size(elems)
	if row%block.Elements != 0 || !ok {
		return fail(&FormatError{Kind: BadSize, Offset: -1, Msg: "rows of " + itoa(row) + " elements are not whole " + t.Type.String() + " blocks of " + itoa(block.Elements)})
	}
	t.Size = size
	if t.Offset, err = w.u64("a tensor offset"); err != nil {
		return fail(err)
	}
	return t, nil
}

// layData places the data section after the header ending at end and
// checks every tensor's offset against the running padded sum ggml
// requires, and its bytes against the file's end.
func (f *File) layData(end int64) *FormatError {
	data, ok := pad(uint64(end), f.Alignment)
	if !ok {
		return &FormatError{Kind: TooLarge, Offset: end, Msg: "the data section's offset overflows"}
	}
	f.DataOffset = int64(min(data, math.MaxInt64))
	var sum uint64
	for i := range f.Tensors {
		t := &f.Tensors[i]
		if t.Offset != sum {
			return &FormatError{Kind: BadOffset, Offset: -1, Tensor: t.Name, Msg: "offset " + itoa(t.Offset) + ", want " + itoa(sum) + ": the sizes of the tensors before it, each padded to " + itoa(f.Alignment)}
		}
		if t.Offset > uint64(f.Size) || t.Size > uint64(f.Size) || data+t.Offset+t.Size > uint64(f.Size) {
			return &FormatError{Kind: TensorPastEnd, Offset: -1, Tensor: t.Name, Msg: "bytes [" + itoa(data+t.Offset) + ", " + itoa(data+t.Offset+t.Size) + ") run past the end of the " + itoa(uint64(f.Size)) + "-byte file"}
		}
		padded, _ := pad(t.Size, f.Alignment) // no overflow: the size fits in the file
		sum += padded
	}
	return nil
}

// pad rounds n up to a multiple of align, a power of two.
func pad(n, align uint64) (uint64, bool) {
	p := (n + align - 1) &^ (align - 1)
	return p, p >= n
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }
