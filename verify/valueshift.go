package verify

import (
	"github.com/ckptcheck/ckptcheck/adapter"
	"github.com/ckptcheck/ckptcheck/quant"
	"github.com/ckptcheck/ckptcheck/verify/internal/values"
)

// Shifted tensors: an adapter's add= rule says a tensor's stored values are
// off its logical ones by a constant (llama.cpp stores Gemma's norm
// weights w as w+1; Tensor.Add is then -1). The bytes stay those stored;
// the tensor is compared as a codec operand whose codec decodes them and
// adds Add (values.Shifted), judged by the steps of the stored encoding
// and of that addition, like any encoding against its source.

// bindShifts binds each tensor of the view that carries an Add to its
// shifted codec, once: a plain tensor becomes a weight of one part, its
// data; a quantized one keeps its parts under the shifted codec. A codec
// the engine cannot shift as it decodes (stored transposed, resolved from
// metadata, not decoded) becomes quant.Unsupported, so that it is named,
// never compared unshifted.
func bindShifts(m *Mapped) {
	for i := range m.View.Tensors {
		t := &m.View.Tensors[i]
		if t.Add == 0 || t.Quant != nil && values.IsShifted(t.Quant.Codec) {
			continue
		}
		if t.Quant == nil {
			c, ok := values.ShiftedPlain(t.DType, t.Add)
			if !ok || t.Transposed {
				c = &quant.Unsupported{Scheme: t.DType.String() + " shifted", Layout: []quant.Part{{Role: quant.Data, DType: t.DType}}}
			}
			t.Quant = &adapter.Quantized{Codec: c, Shape: t.Shape, Parts: []string{t.Name}}
			continue
		}
		if _, named := t.Quant.Codec.(*quant.Unsupported); named {
			continue
		}
		q := *t.Quant
		if _, resolved := q.Codec.(quant.Resolver); resolved || !decodes(*t) {
			q.Codec = &quant.Unsupported{Scheme: q.Codec.String() + " shifted", Layout: q.Codec.Parts()}
		} else {
			q.Codec = values.Shifted(q.Codec, t.Add)
		}
		t.Quant = &q
	}
}
