package quantfixture

import (
	"encoding/binary"
	"math"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// BlockFP8 quantizes [rows, cols] weights to F8_E4M3 blocks of Rows × Cols
// as transformers' fine-grained FP8 quantizer does on a model loaded in
// float32 (huggingface/transformers
// src/transformers/quantizers/quantizer_finegrained_fp8.py
// create_quantized_param at 0095b97653938e60bedf484ded6499f486611582):
// scale = 448 / amax of the block, x_q = e4m3(clamp(x · scale, ±448)),
// weight_scale_inv = 1 / scale, F32 [⌈rows/Rows⌉, ⌈cols/Cols⌉]. Upstream
// requires blocks that divide the shape; partial last blocks are quantized
// the same way, as the codec's ceiling reads them. Mult, when not 0,
// multiplies every stored scale (1 is faithful): a negative control.
type BlockFP8 struct {
	Rows, Cols uint64
	Mult       float32
}

// Config is the export's quantization_config.
func (b BlockFP8) Config() map[string]any {
	return map[string]any{"quant_method": "fp8", "activation_scheme": "dynamic", "weight_block_size": []uint64{b.Rows, b.Cols}}
}

// Layout is the weight and its weight_scale_inv.
func (b BlockFP8) Layout(s fixture.Spec) []safetensors.TensorInfo {
	rows, cols := s.Shape[0], s.Shape[1]
	return []safetensors.TensorInfo{{Name: s.Name, DType: safetensors.F8_E4M3, Shape: s.Shape},
		{Name: s.Name + "_scale_inv", DType: safetensors.F32, Shape: []uint64{ceilDiv(rows, b.Rows), ceilDiv(cols, b.Cols)}}}
}

// Quantize is t (BF16 or F32 [rows, cols]) quantized: the weight and its
// weight_scale_inv, in Layout's order.
func (b BlockFP8) Quantize(t fixture.Tensor) []fixture.Tensor {
	rows, cols := t.Shape[0], t.Shape[1]
	sr, sc := ceilDiv(rows, b.Rows), ceilDiv(cols, b.Cols)
	vals := floats(t)
	amax := make([]float32, sr*sc)
	for r := range rows {
		srow := amax[r/b.Rows*sc:][:sc]
		for c, v := range vals[r*cols : (r+1)*cols] {
			k := uint64(c) / b.Cols
			srow[k] = max(srow[k], float32(math.Abs(float64(v))))
		}
	}
	scale := make([]float32, len(amax))
	for i, a := range amax {
		scale[i] = 448 / a // amax 0 gives +Inf and x_q 0·Inf = NaN, as torch does
	}
	data := make([]byte, rows*cols)
	for r := range rows {
		srow := scale[r/b.Rows*sc:][:sc]
		for c, v := range vals[r*cols : (r+1)*cols] {
			data[r*cols+uint64(c)] = E4M3(max(-448, min(448, v*srow[uint64(c)/b.Cols])))
		}
	}
	mult := b.Mult
	if mult == 0 {
		mult = 1
	}
	sb := make([]byte, 0, 4*len(scale))
	for _, s := range scale {
		sb = binary.LittleEndian.AppendUint32(sb, math.Float32bits(1/s*mult))
	}
	l := b.Layout(fixture.Spec{Name: t.Name, Shape: t.Shape})
	return []fixture.Tensor{{Name: l[0].Name, DType: l[0].DType, Shape: l[0].Shape, Data: data},
		{Name: l[1].Name, DType: l[1].DType, Shape: l[1].Shape, Data: sb}}
}

// E4M3 is x rounded to F8_E4M3 (the fn variant: no infinities, 0x7F NaN),
// to nearest with ties to an even code, as torch's cast to float8_e4m3fn
// does; |x| beyond 448 is the caller's to clamp (it rounds to NaN's code
// or past it otherwise). NaN stays NaN.
func E4M3(x float32) byte {
	b := math.Float32bits(x)
	sign := byte(b>>24) & 0x80
	a := b & 0x7FFFFFFF
	switch {
	case a > 0x7F800000:
		return sign | 0x7F
	case a < 0x3C800000: // below 2^-6, the smallest normal: multiples of 2^-9
		q := math.RoundToEven(float64(math.Float32frombits(a)) * 512)
		return sign | byte(q) // 8 is 2^-6, the first normal's code
	}
	e := a>>23 - 127 + 7
	m, rest := a>>20&7, a&0xFFFFF
	code := e<<3 | m
	if rest > 0x80000 || (rest == 0x80000 && m&1 == 1) {
		code++ // a carry out of the mantissa is the next binade
	}
	if code > 0x7F {
		code = 0x7F
	}
	return sign | byte(code)
}

// ceilDiv is ⌈a/b⌉.
func ceilDiv(a, b uint64) uint64 { return (a + b - 1) / b }
