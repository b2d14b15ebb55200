package torchsave

import (
	"math/bits"
	"strconv"

	"github.com/ckptcheck/ckptcheck/internal/pickle"
	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// A view is a tensor as the pickle describes it, before its storage is
// placed in the file: a strided view of storage key.
type view struct {
	name    string
	dtype   tensorfile.DType
	key     string // the storage's key (data/<key> in an archive)
	offset  uint64 // into the storage, in elements
	shape   []uint64
	stride  []uint64
	storage storageRef
	err     error // why the tensor cannot be read, or nil
}

// A storageRef is a persistent id: ('storage', storage_type, key,
// location, numel[, view_metadata]).
type storageRef struct {
	dtype tensorfile.DType
	key   string
	numel uint64
}

// maxDepth bounds how deeply nested dicts of tensors are walked.
const maxDepth = 32

// walker collects the tensors of an unpickled object: a dict (or
// OrderedDict) of names to tensors, whose nested dicts' names are joined
// with dots. Non-tensor leaves go to meta; the graph is walked once per
// dict, within a budget, so shared references cannot make it expand.
type walker struct {
	entry  string
	views  []view
	meta   map[string]string
	seen   map[any]bool
	budget int
}

func (w *walker) bad(tensor, format string, args ...any) error {
	return formatErr(BadPickle, w.entry, tensor, format, args...)
}

// items returns a dict's or an OrderedDict's entries.
func items(v pickle.Value) ([]pickle.Item, bool) {
	switch v := v.(type) {
	case *pickle.Dict:
		return v.Items, true
	case *pickle.Call:
		if g := v.Func.String(); g == "collections.OrderedDict" && len(v.Args) == 0 {
			return v.Items, true
		}
	}
	return nil, false
}

func (w *walker) walk(prefix string, v pickle.Value, depth int) error {
	w.budget--
	if w.budget < 0 {
		return w.bad(prefix, "the pickle's structure is larger than its size allows")
	}
	if its, ok := items(v); ok {
		if w.seen[v] {
			return nil
		}
		w.seen[v] = true
		if depth >= maxDepth {
			return w.bad(prefix, "dicts nested deeper than %d", maxDepth)
		}
		for _, it := range its {
			var k string
			switch key := it.Key.(type) {
			case string:
				k = key
			case int64:
				k = strconv.FormatInt(key, 10)
			default:
				continue // a key no tensor name is made of
			}
			if prefix != "" {
				k = prefix + "." + k
			}
			if err := w.walk(k, it.Value, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	if c, ok := v.(*pickle.Call); ok && isTensor(c.Func) {
		t, err := w.tensor(prefix, c)
		if err != nil {
			return err
		}
		w.views = append(w.views, t)
		return nil
	}
	switch v := v.(type) {
	case string:
		w.meta[prefix] = v
	case int64:
		w.meta[prefix] = strconv.FormatInt(v, 10)
	case float64:
		w.meta[prefix] = strconv.FormatFloat(v, 'g', -1, 64)
	case bool:
		w.meta[prefix] = strconv.FormatBool(v)
	}
	return nil
}

func isTensor(g pickle.Global) bool {
	return g.Module == "torch._utils" && len(g.Name) > 9 && g.Name[:9] == "_rebuild_"
}

// tensor reads one _rebuild_* call.
func (w *walker) tensor(name string, c *pickle.Call) (view, error) {
	switch c.Func.Name {
	case "_rebuild_parameter", "_rebuild_parameter_with_state":
		if len(c.Args) < 1 {
			return view{}, w.bad(name, "%s without its data", c.Func)
		}
		data, ok := c.Args[0].(*pickle.Call)
		if !ok || !isTensor(data.Func) || data.Func.Name == c.Func.Name {
			return view{}, w.bad(name, "%s of a %T", c.Func, c.Args[0])
		}
		return w.tensor(name, data)
	case "_rebuild_tensor_v2", "_rebuild_tensor":
	default:
		return view{name: name, err: formatErr(UnsupportedTensor, w.entry, name, "%s is not read", c.Func)}, nil
	}
	if len(c.Args) < 4 {
		return view{}, w.bad(name, "%s with %d arguments", c.Func, len(c.Args))
	}
	pid, ok := c.Args[0].(pickle.PersistentID)
	if !ok {
		return view{}, w.bad(name, "the storage is a %T, not a persistent id", c.Args[0])
	}
	ref, viewOffset, err := w.storage(name, pid)
	if err != nil {
		return view{}, err
	}
	off, ok := c.Args[1].(int64)
	shape, ok2 := ints(c.Args[2])
	stride, ok3 := ints(c.Args[3])
	if !ok || off < 0 || !ok2 || !ok3 || len(shape) != len(stride) {
		return view{}, w.bad(name, "storage offset, size and stride are %v, %v, %v", c.Args[1], c.Args[2], c.Args[3])
	}
	return view{name: name, dtype: ref.dtype, key: ref.key, offset: uint64(off) + viewOffset, shape: shape, stride: stride, storage: ref}, nil
}

// storage reads a persistent id. The sixth field, legacy files' view
// metadata (view_key, offset, size), places a storage view inside its
// root storage; its offset is returned.
func (w *walker) storage(name string, pid pickle.PersistentID) (storageRef, uint64, error) {
	t, ok := pid.ID.(pickle.Tuple)
	if !ok || len(t) < 5 || t[0] != "storage" {
		return storageRef{}, 0, w.bad(name, "persistent id %v is not a storage", pid.ID)
	}
	class, ok1 := t[1].(pickle.Global)
	key, ok2 := t[2].(string)
	numel, ok3 := t[4].(int64)
	if !ok1 || !ok2 || !ok3 || numel < 0 {
		return storageRef{}, 0, w.bad(name, "storage %v is malformed", t)
	}
	d, ok := storageDType(class.Name)
	if !ok {
		return storageRef{}, 0, formatErr(UnsupportedTensor, w.entry, name, "storage type %s is not read", class)
	}
	var viewOffset uint64
	if len(t) > 5 && t[5] != nil {
		vm, ok := t[5].(pickle.Tuple)
		if !ok || len(vm) != 3 {
			return storageRef{}, 0, w.bad(name, "storage view %v is malformed", t[5])
		}
		o, ok := vm[1].(int64)
		if !ok || o < 0 {
			return storageRef{}, 0, w.bad(name, "storage view offset %v", vm[1])
		}
		viewOffset = uint64(o)
	}
	return storageRef{dtype: d, key: key, numel: uint64(numel)}, viewOffset, nil
}

// ints reads a tuple (or torch.Size of one) of non-negative integers.
func ints(v pickle.Value) ([]uint64, bool) {
	if c, ok := v.(*pickle.Call); ok && c.Func.String() == "torch.Size" && len(c.Args) == 1 {
		v = c.Args[0]
	}
	t, ok := v.(pickle.Tuple)
	if !ok {
		return nil, false
	}
	out := make([]uint64, len(t))
	for i, x := range t {
		n, ok := x.(int64)
		if !ok || n < 0 {
			return nil, false
		}
		out[i] = uint64(n)
	}
	return out, true
}

// span is how many storage elements from the view's offset the view
// reaches (1 + Σ (size-1)·stride), and whether the view is contiguous
// (row-major, no gaps). ok is false on overflow.
func span(shape, stride []uint64) (n uint64, contiguous, ok bool) {
	numel, ok := tensorfile.NumElements(shape)
	if !ok {
		return 0, false, false
	}
	if numel == 0 {
		return 0, true, true
	}
	contiguous = true
	want := uint64(1)
	last := uint64(0)
	for i := len(shape) - 1; i >= 0; i-- {
		if shape[i] != 1 && stride[i] != want {
			contiguous = false
		}
		hi, lo := bits.Mul64(shape[i]-1, stride[i])
		if hi != 0 {
			return 0, false, false
		}
		var carry uint64
		last, carry = bits.Add64(last, lo, 0)
		if carry != 0 {
			return 0, false, false
		}
		want *= shape[i]
	}
	return last + 1, contiguous, true
}

// place fills in t, a view's tensor over a storage whose data starts at
// byte dataOff of the file and holds avail bytes: one range when the view
// is contiguous, or the transpose of one range (Transposed), or else its
// Pieces, taken from *budget (see maxFilePieces).
func place(t *Tensor, v view, dataOff, avail int64, entry string, budget *int) {
	t.TensorInfo = tensorfile.TensorInfo{Name: v.name, DType: v.dtype, Shape: v.shape, Offset: -1}
	if v.err != nil {
		t.Err = v.err
		return
	}
	n, contiguous, ok := span(v.shape, v.stride)
	es := uint64(v.dtype.Bits() / 8)
	end, carry := bits.Add64(v.offset, n, 0)
	if !ok || carry != 0 || end > v.storage.numel || v.dtype.Bytes(v.storage.numel) > uint64(avail) {
		t.Err = formatErr(StorageOutOfRange, entry, v.name,
			"a view of %d elements at element %d (strides %v) of a storage of %d elements in %d bytes",
			n, v.offset, v.stride, v.storage.numel, avail)
		return
	}
	numel, _ := tensorfile.NumElements(v.shape) // span counted it
	switch {
	case contiguous || transposedView(v.shape, v.stride):
		t.Offset, t.Size = dataOff+int64(v.offset*es), int64(n*es)
		t.Transposed = !contiguous
		return
	case numel/maxOverlap > max(n, 1):
		t.Err = formatErr(NonContiguous, entry, v.name, "strides %v of shape %s read its %d storage elements more than %d times over; it is not read",
			v.stride, tensorfile.FormatShape(v.shape), n, maxOverlap)
		return
	}
	limit := uint64(min(maxPieces, max(*budget, 0)))
	var pieces []Piece
	count, ok := viewRuns(v.shape, v.stride, v.offset, limit, func(off, k uint64) {
		pieces = append(pieces, Piece{Offset: uint64(dataOff) + off*es, Length: k * es})
	})
	if !ok {
		t.Err = formatErr(NonContiguous, entry, v.name, "strides %v of shape %s would be read in %d pieces, more than the %d allowed; it is not read",
			v.stride, tensorfile.FormatShape(v.shape), count, limit)
		return
	}
	*budget -= len(pieces)
	t.Pieces, t.Size = pieces, int64(numel*es)
}
