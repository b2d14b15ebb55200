package quant

import (
	"fmt"
	"slices"

	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// bnbScheme is quant_method "bitsandbytes" (bitsandbytes-foundation/
// bitsandbytes bitsandbytes/functional.py QuantState.as_dict(packed=True)
// and nn/modules.py Linear8bitLt._save_to_state_dict; transformers
// integrations/bitsandbytes.py, read 2026-12-01):
//   - 4-bit (NF4, FP4): X.weight U8 (two values a byte, flattened to [n/2,
//     1]: the shape is in quant_state's data) beside X.weight.absmax,
//     X.weight.quant_map, X.weight.nested_absmax, X.weight.nested_quant_map
//     and X.weight.quant_state.bitsandbytes__nf4 (or __fp4). Its codec is a
//     Resolver: the quant state's JSON (ParseBNBQuantState) says the quant
//     type, block size, dtype, nested offset and shape, and Resolve returns
//     the BNB4 codec; quant_map and the quant state are carried parts.
//   - 8-bit (LLM.int8()): X.weight I8 [out, in] beside X.SCB and
//     X.weight_format (carried), decoded by Int8Rowwise.
type bnbScheme struct{}

var bnbLayouts = []layout{
	{encoding: "4-bit", data: ".weight", weight: ".weight", shared: true, parts: []companion{
		{Scale, []string{".weight.absmax"}}, {Table, []string{".weight.quant_map"}},
		{Scale, []string{".weight.nested_absmax"}}, {Table, []string{".weight.nested_quant_map"}},
		{Meta, []string{".weight.quant_state.bitsandbytes__nf4", ".weight.quant_state.bitsandbytes__fp4"}},
	}},
	{encoding: "int8", data: ".weight", weight: ".weight", shared: true, shape: dataShape, parts: []companion{
		{Scale, []string{".SCB"}}, {Meta, []string{".weight_format"}},
	}},
}

func init() { RegisterScheme(bnbScheme{}) }

func (bnbScheme) Name() string { return "bitsandbytes" }

func (bnbScheme) Bind(_ []byte, tensors []tensorfile.TensorInfo) (Bound, error) {
	return bindLayouts("bitsandbytes", bnbLayouts, tensors, func(l *layout, infos []*tensorfile.TensorInfo, b *Binding) {
		if l.encoding == "int8" {
			if infos[0].DType == tensorfile.I8 && len(infos[0].Shape) == 2 {
				realize(b, infos, Int8Rowwise{}, []int{0, 1}, []int{2}, -1, nil)
			}
			return
		}
		if infos[0].DType != tensorfile.U8 {
			return
		}
		nested := infos[1] != nil && infos[1].DType == tensorfile.U8 || infos[3] != nil
		pending := bnbPendingFor(nested)
		decoded := []int{0, 1}
		if nested {
			decoded = append(decoded, 3, 4)
		}
		realize(b, infos, pending, decoded, []int{2, 5}, 5, resolveBNB4)
	}), nil
}

// bnbPending is a 4-bit weight before its quant state is read: its parts
// are those of the BNB4 codec the state will choose, and it decodes nothing.
type bnbPending struct{ parts []Part }

var bnbPendings = [2]*bnbPending{
	{[]Part{{Data, tensorfile.U8}, {Scale, tensorfile.F32}}},
	{[]Part{{Data, tensorfile.U8}, {Scale, tensorfile.U8}, {Scale, tensorfile.F32}, {Table, tensorfile.F32}}},
}

func bnbPendingFor(nested bool) *bnbPending {
	if nested {
		return bnbPendings[1]
	}
	return bnbPendings[0]
}

func (p *bnbPending) String() string { return "bitsandbytes 4-bit (quant_state not read)" }
func (p *bnbPending) Parts() []Part  { return p.parts }
func (p *bnbPending) Tile() Tile     { return Tile{Rows: 1, Cols: 1} }
func (p *bnbPending) Sizes(Dims, []uint64) error {
	return fmt.Errorf("%s: %w", p, ErrUnsupported)
}
func (p *bnbPending) Spans(_ Dims, _, _ uint64, dst []Span) ([]Span, error) {
	return dst, fmt.Errorf("%s: %w", p, ErrUnsupported)
}
func (p *bnbPending) Decode(Dims, uint64, uint64, [][]byte, []float32) error {
	return fmt.Errorf("%s: %w", p, ErrUnsupported)
}

type bnb4Key BNB4Config

// resolveBNB4 reads the quant state into the BNB4 codec, carrying the same
// parts as the pending one.
func resolveBNB4(c Codec, meta []byte) (Codec, []uint64, error) {
	cc := c.(*carried)
	state, err := ParseBNBQuantState(meta)
	if err != nil {
		return nil, nil, err
	}
	if _, err := state.Dims(); err != nil {
		return nil, nil, err
	}
	codec, err := intern(bnb4Key(state.Config), func() (Codec, error) { return NewBNB4(state.Config) })
	if err != nil {
		return nil, nil, err
	}
	if !slices.Equal(codec.Parts(), cc.inner.Parts()) {
		return nil, nil, fmt.Errorf("%s: the quant state says %s, the tensors another layout", cc.inner, codec)
	}
	n := len(cc.parts) - len(cc.sizes)
	return carry(codec, cc.parts[n:], cc.sizes), state.Shape, nil
}
