package torchsave

import (
	"strings"
	"sync"

	"github.com/ckptcheck/ckptcheck/internal/pickle"
	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// Allowed reports whether a global may appear in a torch file's pickle: the
// names torch's weights_only unpickler allows (_get_allowed_globals in
// pytorch/pytorch torch/_weights_only_unpickler.py at commit
// 59003835cabe8381d267270d43acca6c211a70a8): collections.OrderedDict,
// torch.nn.parameter.Parameter, torch.serialization._get_layout,
// torch.Size, torch.Tensor, the dtypes, torch._tensor_classes,
// torch._storage_classes and the torch._utils._rebuild_* functions; plus
// what later revisions of that list add and torch 2.x files carry: every
// dtype (torch.bfloat16, the float8 types), the storages of those dtypes,
// torch.device, collections.Counter, builtins set, frozenset and
// bytearray, and _rebuild_parameter_with_state and _rebuild_qtensor (listed
// so that a quantized tensor is reported as unsupported, not unsafe).
// Nothing named is ever imported or called.
func Allowed(g pickle.Global) bool {
	if allowed()[g.String()] {
		return true
	}
	switch g.Module {
	case "torch", "torch.cuda":
		if _, ok := storageDType(g.Name); ok || g.Name == "ComplexDoubleStorage" ||
			strings.HasSuffix(g.Name, "Tensor") && tensorClasses()[strings.TrimSuffix(g.Name, "Tensor")] {
			return true
		}
		if g.Module == "torch" {
			_, ok := tensorfile.LookupDType(g.Name)
			return ok || otherDTypes()[g.Name]
		}
	}
	return false
}

var allowed = sync.OnceValue(func() map[string]bool {
	return map[string]bool{
		"collections.OrderedDict":                      true,
		"collections.Counter":                          true,
		"torch.nn.parameter.Parameter":                 true,
		"torch.serialization._get_layout":              true,
		"torch.Size":                                   true,
		"torch.Tensor":                                 true,
		"torch.device":                                 true,
		"torch.UntypedStorage":                         true,
		"torch.storage.UntypedStorage":                 true,
		"torch.storage.TypedStorage":                   true,
		"torch.storage._UntypedStorage":                true,
		"torch._utils._rebuild_parameter":              true,
		"torch._utils._rebuild_parameter_with_state":   true,
		"torch._utils._rebuild_tensor":                 true,
		"torch._utils._rebuild_tensor_v2":              true,
		"torch._utils._rebuild_sparse_tensor":          true,
		"torch._utils._rebuild_meta_tensor_no_storage": true,
		"torch._utils._rebuild_sparse_csr_tensor":      true,
		"torch._utils._rebuild_qtensor":                true,
		"builtins.set":                                 true,
		"builtins.frozenset":                           true,
		"builtins.bytearray":                           true,
	}
})

// tensorClasses are torch._tensor_classes' stems (torch.FloatTensor…).
var tensorClasses = sync.OnceValue(func() map[string]bool {
	return map[string]bool{
		"Double": true, "Float": true, "Long": true, "Int": true, "Short": true, "Char": true,
		"Byte": true, "Bool": true, "Half": true, "BFloat16": true,
	}
})

// otherDTypes are torch dtypes tensorfile has no DType for.
var otherDTypes = sync.OnceValue(func() map[string]bool {
	return map[string]bool{"complex32": true, "complex128": true, "cfloat": true, "cdouble": true, "qint8": true, "quint8": true, "qint32": true}
})

// storageDType is the element type of a storage class (FloatStorage).
func storageDType(class string) (tensorfile.DType, bool) {
	d, ok := storageDTypes()[class]
	return d, ok
}

var storageDTypes = sync.OnceValue(func() map[string]tensorfile.DType {
	return map[string]tensorfile.DType{
		"DoubleStorage":          tensorfile.F64,
		"FloatStorage":           tensorfile.F32,
		"HalfStorage":            tensorfile.F16,
		"BFloat16Storage":        tensorfile.BF16,
		"LongStorage":            tensorfile.I64,
		"IntStorage":             tensorfile.I32,
		"ShortStorage":           tensorfile.I16,
		"CharStorage":            tensorfile.I8,
		"ByteStorage":            tensorfile.U8,
		"BoolStorage":            tensorfile.BOOL,
		"ComplexFloatStorage":    tensorfile.C64,
		"UInt16Storage":          tensorfile.U16,
		"UInt32Storage":          tensorfile.U32,
		"UInt64Storage":          tensorfile.U64,
		"Float8_e5m2Storage":     tensorfile.F8_E5M2,
		"Float8_e4m3fnStorage":   tensorfile.F8_E4M3,
		"Float8_e5m2fnuzStorage": tensorfile.F8_E5M2FNUZ,
		"Float8_e4m3fnuzStorage": tensorfile.F8_E4M3FNUZ,
		"UntypedStorage":         tensorfile.U8,
		"_UntypedStorage":        tensorfile.U8,
	}
})
