package adapter

import (
	"github.com/ckptcheck/ckptcheck/quant"
	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// Quantized says a logical tensor is a quantized weight: the scheme's codec
// and the tensors of the view that hold its parts. The logical tensor
// keeps its data part's dtype, shape and segments.
type Quantized struct {
	Codec quant.Codec
	// Shape is the weight's dequantized shape, nil when the headers do not
	// say it (bitsandbytes 4-bit keeps it in its quant_state's data).
	Shape []uint64
	// Parts names, per Codec.Parts(), the tensor that held the part, ""
	// for a part the checkpoint lacks.
	Parts []string
	// Companions are the parts' tensors other than the data, as the view
	// held them: compared byte for byte when both sides store the weight
	// alike.
	Companions []Tensor
}

// BindQuant folds each quantized weight of the view and its companions
// (scales, zero points, blocks) into one logical tensor named as the
// weight, through scheme s: a quantized side then compares weight by
// weight, and a weight one side lacks is missing whatever its encoding.
// config is the quantization_config as JSON (nil when there is none). It
// returns what the scheme bound; the view is unchanged on an error.
func (v *View) BindQuant(s quant.Scheme, config []byte) (quant.Bound, error) {
	infos := make([]tensorfile.TensorInfo, len(v.Tensors))
	for i, t := range v.Tensors {
		infos[i] = tensorfile.TensorInfo{Name: t.Name, DType: t.DType, Shape: t.Shape}
	}
	b, err := s.Bind(config, infos)
	if err != nil || len(b.Bindings) == 0 {
		return b, err
	}
	// The weight takes its data tensor's place; the other parts leave.
	gone := make([]bool, len(v.Tensors))
	for _, bind := range b.Bindings {
		i := v.Index(bind.Parts[0])
		if i < 0 {
			continue
		}
		q := &Quantized{Codec: bind.Codec, Shape: bind.Shape, Parts: bind.Parts}
		for _, p := range bind.Parts[1:] {
			if j := v.Index(p); j >= 0 && j != i && !gone[j] {
				gone[j] = true
				q.Companions = append(q.Companions, v.Tensors[j])
			}
		}
		t := &v.Tensors[i]
		t.Name, t.Quant = bind.Weight, q
	}
	kept := v.Tensors[:0]
	for i, t := range v.Tensors {
		if !gone[i] {
			kept = append(kept, t)
		}
	}
	clear(v.Tensors[len(kept):])
	v.Tensors = kept
	v.byName = make(map[string]int, len(kept))
	for i, t := range kept {
		if _, dup := v.byName[t.Name]; !dup {
			v.byName[t.Name] = i
		}
	}
	return b, nil
}
