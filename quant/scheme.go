package quant

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// A Scheme is a quantization method's layout over named tensors: which
// tensors are quantized weights, which companions belong to each, and the
// codec that decodes them.
type Scheme interface {
	// Name is the quantization_config quant_method the scheme handles
	// ("fp8", "compressed-tensors", "gptq", …).
	Name() string
	// Bind reads config (the quantization_config object as JSON; nil when
	// the checkpoint has none) and the tensors of one checkpoint (every
	// shard's, with their header shapes and dtypes) and binds each
	// quantized weight to its companions. It reads no tensor data, and its
	// work and memory are bounded by the sizes of config and tensors. An
	// error is a config the scheme cannot read; tensors that do not fit the
	// scheme are reported in the Binding (a missing part) or Unused.
	Bind(config []byte, tensors []tensorfile.TensorInfo) (Bound, error)
}

// Bound is what a Scheme found.
type Bound struct {
	// Bindings has one entry per quantized weight, in the order of the
	// tensors given to Bind.
	Bindings []Binding
	// Unused lists companions (by their names) that no weight claims.
	Unused []string
}

// A Binding is one quantized weight: the logical tensor a checkpoint
// means, and where its parts are.
type Binding struct {
	// Weight is the logical weight's name (the name of its data tensor in
	// most schemes: "model.layers.0.mlp.down_proj.weight").
	Weight string
	// Shape is the weight's logical (dequantized) shape.
	Shape []uint64
	// Codec decodes the weight.
	Codec Codec
	// Parts names, per Codec.Parts(), the tensor holding the part, or ""
	// when the checkpoint lacks it (a finding for the caller to report).
	Parts []string
}

var schemes sync.Map // name → Scheme

// RegisterScheme makes a scheme known to LookupScheme. Scheme files call it
// from init; registering a name twice is a programming error and panics.
func RegisterScheme(s Scheme) {
	if _, dup := schemes.LoadOrStore(s.Name(), s); dup {
		panic(fmt.Sprintf("quant: scheme %q registered twice", s.Name()))
	}
}

// LookupScheme returns the scheme registered for a quant_method.
func LookupScheme(quantMethod string) (Scheme, bool) {
	s, ok := schemes.Load(quantMethod)
	if !ok {
		return nil, false
	}
	return s.(Scheme), true
}

// Schemes returns every registered scheme, by name.
func Schemes() []Scheme {
	var out []Scheme
	schemes.Range(func(_, v any) bool {
		out = append(out, v.(Scheme))
		return true
	})
	slices.SortFunc(out, func(a, b Scheme) int { return strings.Compare(a.Name(), b.Name()) })
	return out
}
