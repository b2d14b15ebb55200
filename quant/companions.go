package quant

import (
	"strings"

	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// A layout is one way a scheme stores a weight: a data tensor named stem +
// data, and companions named stem + one of their suffixes. Most schemes
// are a few layouts, and binding them is the same walk over the names,
// which bindLayouts does.
type layout struct {
	encoding string
	data     string // the data tensor's suffix: ".qweight", "_blocks", ".weight"
	weight   string // the suffix of the logical weight the stem names
	// shared is set when the data suffix also names plain tensors (".weight"
	// of a norm beside FP8 linears): such a tensor is a quantized weight
	// only when one of its companions is there.
	shared bool
	parts  []companion
	// shape is the weight's logical shape from its tensors' headers (data
	// first, then parts, nil when absent), or nil when only their data or
	// the config says it.
	shape func(ts []*tensorfile.TensorInfo) []uint64
}

// A companion is a part other than the data: its role, and the suffixes
// (after the stem) that name it, the first usual.
type companion struct {
	role     Role
	suffixes []string
}

// A refiner replaces a binding's Unsupported codec by the codec that
// decodes it, when the layout's tensors (infos, in the layout's part order,
// the data first, nil where absent) and the scheme's config determine one;
// it leaves the binding alone otherwise.
type refiner func(l *layout, infos []*tensorfile.TensorInfo, b *Binding)

// bindLayouts binds tensors to the first layout, in order, that claims
// each, and lists as Unused the companions no weight claims. Its work is
// a few map look-ups per tensor and layout. refine, when set, refines
// each binding.
func bindLayouts(scheme string, layouts []layout, tensors []tensorfile.TensorInfo, refine refiner) Bound {
	byName := make(map[string]int, len(tensors))
	for i, t := range tensors {
		if _, dup := byName[t.Name]; !dup {
			byName[t.Name] = i
		}
	}
	claimed := make([]bool, len(tensors))
	var b Bound
	for i := range tensors {
		if claimed[i] {
			continue
		}
		for k := range layouts {
			if bind, infos, ok := layouts[k].bind(scheme, tensors, i, byName, claimed); ok {
				if refine != nil {
					refine(&layouts[k], infos, &bind)
				}
				b.Bindings = append(b.Bindings, bind)
				break
			}
		}
	}
	for i, t := range tensors {
		if !claimed[i] && isCompanion(layouts, t.Name) {
			b.Unused = append(b.Unused, t.Name)
		}
	}
	return b
}

func (l layout) bind(scheme string, tensors []tensorfile.TensorInfo, i int, byName map[string]int, claimed []bool) (Binding, []*tensorfile.TensorInfo, bool) {
	data := &tensors[i]
	stem, ok := strings.CutSuffix(data.Name, l.data)
	if !ok || stem == "" {
		return Binding{}, nil, false
	}
	found := make([]int, len(l.parts))
	some := false
	for k, c := range l.parts {
		found[k] = -1
		for _, s := range c.suffixes {
			if j, ok := byName[stem+s]; ok && !claimed[j] {
				found[k], some = j, true
				break
			}
		}
	}
	if l.shared && !some {
		return Binding{}, nil, false
	}
	codec := &Unsupported{Scheme: scheme, Encoding: l.encoding, Layout: make([]Part, 1+len(l.parts))}
	names := make([]string, 1+len(l.parts))
	infos := make([]*tensorfile.TensorInfo, 1+len(l.parts))
	codec.Layout[0], names[0], infos[0] = Part{Data, data.DType}, data.Name, data
	claimed[i] = true
	for k, j := range found {
		codec.Layout[k+1].Role = l.parts[k].role
		if j < 0 {
			continue
		}
		claimed[j] = true
		codec.Layout[k+1].DType, names[k+1], infos[k+1] = tensors[j].DType, tensors[j].Name, &tensors[j]
	}
	var shape []uint64
	if l.shape != nil {
		shape = l.shape(infos)
	}
	return Binding{Weight: stem + l.weight, Shape: shape, Codec: codec, Parts: names}, infos, true
}

// isCompanion reports a name that some layout's companion suffix ends.
func isCompanion(layouts []layout, name string) bool {
	for _, l := range layouts {
		for _, c := range l.parts {
			for _, s := range c.suffixes {
				if stem, ok := strings.CutSuffix(name, s); ok && stem != "" {
					return true
				}
			}
		}
	}
	return false
}

// dataShape is the logical shape of layouts whose data tensor has it.
func dataShape(ts []*tensorfile.TensorInfo) []uint64 { return ts[0].Shape }
