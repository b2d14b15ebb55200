package torchsave

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/ckptcheck/ckptcheck/internal/pickle"
	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// DCPMetadataName is the file that makes a folder a torch.distributed
// checkpoint (DCP) step directory.
const DCPMetadataName = ".metadata"

// DCPMetadata is a DCP step directory's .metadata: its tensors with their
// chunks, and its non-tensor (BytesStorageMetadata) entries, in the
// order state_dict_metadata lists them.
type DCPMetadata struct {
	Tensors []DCPTensor
	Bytes   []DCPBytes
	Version string // Metadata.version, if recorded
}

// A DCPTensor is one TensorStorageMetadata: the tensor's global dtype and
// shape and the chunks it was saved in.
type DCPTensor struct {
	FQN    string
	Part   DCPPart
	DType  tensorfile.DType
	Shape  []uint64
	Chunks []DCPChunk
}

// A DCPChunk is a ChunkStorageMetadata and the storage item it was
// written to.
type DCPChunk struct {
	Offsets, Sizes []uint64
	Item           DCPItem
}

// A DCPBytes is a BytesStorageMetadata entry (a dataloader's or
// train_state's pickled bytes): listed, never parsed.
type DCPBytes struct {
	FQN  string
	Part DCPPart
	Item DCPItem
}

// A DCPItem is a _StorageInfo: a byte range of a file of the folder.
// Transforms are the newest FileSystemWriter's transform_descriptors.
type DCPItem struct {
	RelativePath   string
	Offset, Length uint64
	Transforms     []string
}

// DCPPart says which part of a trainer's state an entry belongs to: only
// DCPModel entries are weights.
type DCPPart uint8

const (
	DCPModel DCPPart = iota
	DCPOptimizer
	DCPLRScheduler
	DCPDataloader
	DCPTrainState
)

var partNames = [...]string{DCPModel: "model", DCPOptimizer: "optimizer", DCPLRScheduler: "lr_scheduler", DCPDataloader: "dataloader", DCPTrainState: "train_state"}

func (p DCPPart) String() string {
	if int(p) < len(partNames) {
		return partNames[p]
	}
	return "DCPPart(" + strconv.Itoa(int(p)) + ")"
}

// partOf tells a trainer's state from the model's by the first component
// of the entry's planner_data path (its FQN's when there is none), as
// torchtitan's and torch's state dicts name them: model FQNs are at the
// top level or under "model".
func partOf(first string) DCPPart {
	switch first {
	case "optimizer", "optim", "optimizers":
		return DCPOptimizer
	case "lr_scheduler", "lr_schedulers", "scheduler":
		return DCPLRScheduler
	case "dataloader":
		return DCPDataloader
	case "train_state":
		return DCPTrainState
	}
	return DCPModel
}

// DCP's classes, as upstream names them: pytorch/pytorch
// torch/distributed/checkpoint/metadata.py (Metadata, StorageMeta,
// TensorStorageMetadata, TensorProperties, _MEM_FORMAT_ENCODING,
// ChunkStorageMetadata, BytesStorageMetadata, MetadataIndex) and
// torch/distributed/checkpoint/filesystem.py (_StorageInfo); read at
// commit 03e266fa83db15f9755e8467ade6968d230d3e17 and later revisions.
// Older torch kept TensorProperties in torch.distributed._shard.
const (
	dcpMeta  = "torch.distributed.checkpoint.metadata."
	dcpFS    = "torch.distributed.checkpoint.filesystem."
	dcpShard = "torch.distributed._shard.sharded_tensor.metadata."
)

var dcpAllowed = sync.OnceValue(func() map[string]bool {
	return map[string]bool{
		dcpMeta + "Metadata":              true,
		dcpMeta + "StorageMeta":           true,
		dcpMeta + "TensorStorageMetadata": true,
		dcpMeta + "TensorProperties":      true,
		dcpMeta + "_MEM_FORMAT_ENCODING":  true,
		dcpMeta + "ChunkStorageMetadata":  true,
		dcpMeta + "BytesStorageMetadata":  true,
		dcpMeta + "MetadataIndex":         true,
		dcpFS + "_StorageInfo":            true,
		dcpShard + "TensorProperties":     true,
		dcpShard + "MEM_FORMAT_ENCODING":  true,
		"torch.Size":                      true,
		"torch.serialization._get_layout": true,
		"torch.strided":                   true,
		"torch.contiguous_format":         true,
		"torch.channels_last":             true,
		"torch.preserve_format":           true,
		"collections.OrderedDict":         true,
		"pathlib.PosixPath":               true,
		"pathlib.WindowsPath":             true,
		"pathlib.PurePosixPath":           true,
		"pathlib.PureWindowsPath":         true,
		"pathlib._local.PosixPath":        true, // Python 3.13 moved the classes
		"pathlib._local.WindowsPath":      true,
		"pathlib._local.PurePosixPath":    true,
		"pathlib._local.PureWindowsPath":  true,
		"builtins.getattr":                true, // Python 3.11 pickles an enum as getattr(class, name)
	}
})

// DCPAllowed reports whether a global may appear in a DCP .metadata
// pickle: DCP's metadata classes, torch.Size, the dtypes, layouts and
// memory formats, collections.OrderedDict, the pathlib classes a
// checkpoint_id may be, and builtins.getattr, with which Python 3.11
// pickles an enum member. Nothing is imported or called, so getattr can
// only name a member of a global this list allows.
func DCPAllowed(g pickle.Global) bool {
	if dcpAllowed()[g.String()] {
		return true
	}
	if g.Module == "torch" {
		_, ok := tensorfile.LookupDType(g.Name)
		return ok || otherDTypes()[g.Name]
	}
	return false
}

// ReadDCPMetadata reads a DCP .metadata pickle without running it: a
// global DCPAllowed refuses is an UnsafePickle error, and the pickle is not
// read further. It checks what the metadata alone shows: each chunk lies
// within its tensor and has a storage item; CheckPaths checks the items'
// paths and Tiling that the chunks cover each tensor exactly.
func ReadDCPMetadata(b []byte) (*DCPMetadata, error) {
	v, _, err := pickle.Load(b, DCPAllowed, pickle.Limits{})
	if err != nil {
		return nil, pickleErr(DCPMetadataName, err)
	}
	r := &dcpReader{}
	md, err := r.metadata(v)
	if err != nil {
		return nil, err
	}
	return md, nil
}

type dcpReader struct{}

func dcpBad(tensor, format string, args ...any) *FormatError {
	return formatErr(DCPBadMetadata, DCPMetadataName, tensor, format, args...)
}

// object returns the __dict__ a dataclass instance of class was built
// with (NEWOBJ, then BUILD).
func object(v pickle.Value, classes ...string) (*pickle.Dict, bool) {
	c, ok := v.(*pickle.Call)
	if !ok || !slices.Contains(classes, c.Func.String()) {
		return nil, false
	}
	d, ok := c.State.(*pickle.Dict)
	if !ok && c.State == nil {
		return &pickle.Dict{}, true // a dataclass with no fields
	}
	return d, ok
}

func (r *dcpReader) metadata(v pickle.Value) (*DCPMetadata, error) {
	d, ok := object(v, dcpMeta+"Metadata")
	if !ok {
		return nil, dcpBad("", "the pickle is not a %sMetadata", dcpMeta)
	}
	md := &DCPMetadata{}
	if s, ok := dictGet(d, "version").(string); ok {
		md.Version = s
	}
	sdm, ok := items(dictGet(d, "state_dict_metadata"))
	if !ok {
		return nil, dcpBad("", "state_dict_metadata is not a dict")
	}
	paths := r.plannerPaths(dictGet(d, "planner_data"))
	storage, err := r.storageData(dictGet(d, "storage_data"))
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, it := range sdm {
		fqn, ok := it.Key.(string)
		if !ok {
			return nil, dcpBad("", "a state_dict_metadata key is not a string")
		}
		if seen[fqn] {
			return nil, dcpBad(fqn, "listed twice in state_dict_metadata")
		}
		seen[fqn] = true
		part := partOf(firstComponent(fqn, paths[fqn]))
		if _, ok := object(it.Value, dcpMeta+"BytesStorageMetadata"); ok {
			item, ok := storage[indexKey(fqn, nil)]
			if !ok {
				return nil, dcpBad(fqn, "no storage_data item for the bytes entry")
			}
			md.Bytes = append(md.Bytes, DCPBytes{FQN: fqn, Part: part, Item: item})
			continue
		}
		t, err := r.tensor(fqn, it.Value, storage)
		if err != nil {
			return nil, err
		}
		t.Part = part
		md.Tensors = append(md.Tensors, t)
	}
	return md, nil
}

func dictGet(d *pickle.Dict, k string) pickle.Value {
	v, _ := d.Get(k)
	return v
}

func firstComponent(fqn string, path []string) string {
	if len(path) > 0 {
		return path[0]
	}
	first, _, _ := strings.Cut(fqn, ".")
	return first
}

// plannerPaths reads DefaultSavePlanner's planner_data: each FQN's path
// in the nested state dict (a tuple of keys and list indices). Anything
// else (another planner's data) is ignored: the FQNs then decide.
func (r *dcpReader) plannerPaths(v pickle.Value) map[string][]string {
	its, ok := items(v)
	if !ok {
		return nil
	}
	out := make(map[string][]string, len(its))
	for _, it := range its {
		fqn, ok := it.Key.(string)
		t, ok2 := it.Value.(pickle.Tuple)
		if !ok || !ok2 {
			continue
		}
		var path []string
		for _, x := range t {
			switch x := x.(type) {
			case string:
				path = append(path, x)
			case int64:
				path = append(path, strconv.FormatInt(x, 10))
			}
		}
		out[fqn] = path
	}
	return out
}

// indexKey is a MetadataIndex's identity: its FQN and chunk offset, as
// MetadataIndex's __eq__ compares them (the index is a hint).
func indexKey(fqn string, offset []uint64) string {
	var b strings.Builder
	b.WriteString(fqn)
	if offset != nil {
		b.WriteByte(0)
		for _, o := range offset {
			b.WriteString(strconv.FormatUint(o, 10))
			b.WriteByte(',')
		}
	}
	return b.String()
}

func (r *dcpReader) storageData(v pickle.Value) (map[string]DCPItem, error) {
	its, ok := items(v)
	if !ok {
		return nil, dcpBad("", "storage_data is not a dict of MetadataIndex to _StorageInfo (another storage writer's?)")
	}
	out := make(map[string]DCPItem, len(its))
	for _, it := range its {
		k, ok := object(it.Key, dcpMeta+"MetadataIndex")
		if !ok {
			return nil, dcpBad("", "a storage_data key is not a MetadataIndex")
		}
		fqn, ok := dictGet(k, "fqn").(string)
		if !ok {
			return nil, dcpBad("", "a MetadataIndex has no fqn")
		}
		var offset []uint64
		if o := dictGet(k, "offset"); o != nil {
			if offset, ok = ints(o); !ok {
				return nil, dcpBad(fqn, "a MetadataIndex offset is not a torch.Size")
			}
		}
		item, err := r.item(fqn, it.Value)
		if err != nil {
			return nil, err
		}
		out[indexKey(fqn, offset)] = item
	}
	return out, nil
}

func (r *dcpReader) item(fqn string, v pickle.Value) (DCPItem, error) {
	d, ok := object(v, dcpFS+"_StorageInfo")
	if !ok {
		return DCPItem{}, dcpBad(fqn, "a storage_data value is not a _StorageInfo")
	}
	path, ok := dictGet(d, "relative_path").(string)
	off, ok2 := dictGet(d, "offset").(int64)
	n, ok3 := dictGet(d, "length").(int64)
	if !ok || !ok2 || !ok3 || off < 0 || n < 0 {
		return DCPItem{}, dcpBad(fqn, "a _StorageInfo needs a relative_path and a non-negative offset and length")
	}
	item := DCPItem{RelativePath: path, Offset: uint64(off), Length: uint64(n)}
	switch t := dictGet(d, "transform_descriptors").(type) {
	case nil:
	case *pickle.List, pickle.Tuple:
		var xs []pickle.Value
		if l, ok := t.(*pickle.List); ok {
			xs = l.Items
		} else {
			xs = t.(pickle.Tuple)
		}
		for _, x := range xs {
			s, ok := x.(string)
			if !ok {
				return DCPItem{}, dcpBad(fqn, "a transform descriptor is not a string")
			}
			item.Transforms = append(item.Transforms, s)
		}
	default:
		return DCPItem{}, dcpBad(fqn, "transform_descriptors is not a sequence of strings")
	}
	return item, nil
}

func (r *dcpReader) tensor(fqn string, v pickle.Value, storage map[string]DCPItem) (DCPTensor, error) {
	d, ok := object(v, dcpMeta+"TensorStorageMetadata")
	if !ok {
		return DCPTensor{}, dcpBad(fqn, "neither a TensorStorageMetadata nor a BytesStorageMetadata")
	}
	t := DCPTensor{FQN: fqn}
	dtype, err := r.dtype(fqn, dictGet(d, "properties"))
	if err != nil {
		return DCPTensor{}, err
	}
	t.DType = dtype
	if t.Shape, ok = ints(dictGet(d, "size")); !ok {
		return DCPTensor{}, dcpBad(fqn, "size is not a torch.Size")
	}
	chunks, ok := dictGet(d, "chunks").(*pickle.List)
	if !ok {
		return DCPTensor{}, dcpBad(fqn, "chunks is not a list")
	}
	for i, cv := range chunks.Items {
		cd, ok := object(cv, dcpMeta+"ChunkStorageMetadata")
		if !ok {
			return DCPTensor{}, dcpBad(fqn, "chunk %d is not a ChunkStorageMetadata", i)
		}
		offsets, ok := ints(dictGet(cd, "offsets"))
		sizes, ok2 := ints(dictGet(cd, "sizes"))
		if !ok || !ok2 || len(offsets) != len(t.Shape) || len(sizes) != len(t.Shape) {
			return DCPTensor{}, dcpBad(fqn, "chunk %d's offsets and sizes are not torch.Sizes of the tensor's %d dimensions", i, len(t.Shape))
		}
		for j := range t.Shape {
			if offsets[j] > t.Shape[j] || sizes[j] > t.Shape[j]-offsets[j] {
				return DCPTensor{}, dcpBad(fqn, "chunk %s reaches past the tensor's shape %v", region(offsets, sizes), t.Shape)
			}
		}
		item, ok := storage[indexKey(fqn, offsets)]
		if !ok {
			return DCPTensor{}, dcpBad(fqn, "chunk %s has no storage_data item", region(offsets, sizes))
		}
		t.Chunks = append(t.Chunks, DCPChunk{Offsets: offsets, Sizes: sizes, Item: item})
	}
	return t, nil
}

// dtype reads a TensorProperties' dtype: its __getstate__ tuple (dtype,
// layout, requires_grad, memory format, pin_memory), or a __dict__.
func (r *dcpReader) dtype(fqn string, v pickle.Value) (tensorfile.DType, error) {
	c, ok := v.(*pickle.Call)
	if !ok || c.Func.String() != dcpMeta+"TensorProperties" && c.Func.String() != dcpShard+"TensorProperties" {
		return 0, dcpBad(fqn, "properties is not a TensorProperties")
	}
	var dv pickle.Value
	switch s := c.State.(type) {
	case pickle.Tuple:
		if len(s) > 0 {
			dv = s[0]
		}
	case *pickle.Dict:
		dv = dictGet(s, "dtype")
	}
	g, ok := dv.(pickle.Global)
	if !ok || g.Module != "torch" {
		return 0, dcpBad(fqn, "properties has no torch dtype")
	}
	d, ok := tensorfile.LookupDType(g.Name)
	if !ok {
		return 0, formatErr(UnsupportedTensor, DCPMetadataName, fqn, "dtype torch.%s is not read", g.Name)
	}
	return d, nil
}

// CheckPaths refuses an item whose relative_path unsafe gives a reason
// for (checkpoint.UnsafePath: the rules of the safetensors index, which
// torchsave, below checkpoint, does not repeat), naming the entry.
func (md *DCPMetadata) CheckPaths(unsafe func(string) string) error {
	check := func(fqn string, it DCPItem) error {
		if reason := unsafe(it.RelativePath); reason != "" {
			return dcpBad(fqn, "relative_path %q %s", it.RelativePath, reason)
		}
		return nil
	}
	for _, t := range md.Tensors {
		for _, c := range t.Chunks {
			if err := check(t.FQN, c.Item); err != nil {
				return err
			}
		}
	}
	for _, b := range md.Bytes {
		if err := check(b.FQN, b.Item); err != nil {
			return err
		}
	}
	return nil
}

// region formats a chunk as its index ranges: [0:2, 0:6].
func region(offsets, sizes []uint64) string {
	parts := make([]string, len(offsets))
	for i := range offsets {
		parts[i] = fmt.Sprintf("%d:%d", offsets[i], offsets[i]+sizes[i])
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// Transform refuses a tensor a chunk of which records a transform
// (transform_descriptors: the newest FileSystemWriter's stream
// extensions, such as compression): none is implemented, so its items'
// bytes are not what a reader of the raw item expects.
func (t *DCPTensor) Transform() error {
	for _, c := range t.Chunks {
		if len(c.Item.Transforms) > 0 {
			return formatErr(DCPUnsupportedTransform, c.Item.RelativePath, t.FQN, "chunk %s is stored with transform %q, which is not implemented",
				region(c.Offsets, c.Sizes), c.Item.Transforms[0])
		}
	}
	return nil
}

// NumElements is the number of elements of the tensor's global shape; ok
// is false when it overflows 64 bits.
func (t *DCPTensor) NumElements() (uint64, bool) { return tensorfile.NumElements(t.Shape) }
