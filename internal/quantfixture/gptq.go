package quantfixture

import (
	"encoding/binary"
	"math"

	"github.com/x448/float16"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// GPTQ quantizes [out, in] weights to Bits-bit codes in groups of Group
// input columns, rounded to the grid (GPTQ without its error compensation,
// AutoGPTQ's RTN: a valid GPTQ encoding), and packs them as AutoGPTQ does
// (desc_act false):
//   - the grid (AutoGPTQ/AutoGPTQ auto_gptq/quantization/quantizer.py
//     find_params and quantize at 3ef391f3b0f7e9da7dfed16f940a96d7e427f0d3):
//     xmin = min(min x, 0), xmax = max(max x, 0); symmetric: xmax =
//     max(|xmin|, xmax), xmin = −xmax when xmin < 0, zero = (maxq+1)/2;
//     asymmetric: zero = round(−xmin/scale); scale = (xmax − xmin)/maxq
//     (a group of zeros gets xmin, xmax = −1, 1); Q = scale · (clamp(round(x
//     / scale) + zero, 0, maxq) − zero);
//   - the pack (auto_gptq/nn_modules/qlinear/qlinear_cuda_old.py pack at
//     179776bd1d97a2e7f84b72318630f43719647a11): scales stored F16, q =
//     round((Q + zero · scale) / scale_f16), qweight I32 [in/pack, out] with
//     column k·pack + j of row o at bit j·bits of word [k, o], qzeros I32
//     [groups, out/pack] holding zero − 1 (v1; V2 stores zero itself),
//     g_idx I32 [in] = c / group.
//
// q is clamped to [0, maxq] after the pack's rounding, which the F16 scale
// can push one code past the grid. Mult, when not 0, multiplies every
// stored scale (1 is faithful): a negative control.
type GPTQ struct {
	Bits, Group uint64
	Asym, V2    bool
	Mult        float32
}

// Config is the export's quantization_config.
func (g GPTQ) Config() map[string]any {
	c := map[string]any{"quant_method": "gptq", "bits": g.Bits, "group_size": g.Group, "desc_act": false, "sym": !g.Asym,
		"checkpoint_format": "gptq"}
	if g.V2 {
		c["checkpoint_format"] = "gptq_v2"
	}
	return c
}

// Layout is qweight, qzeros, scales and g_idx beside the weight's name.
func (g GPTQ) Layout(s fixture.Spec) []safetensors.TensorInfo {
	out, in := s.Shape[0], s.Shape[1]
	pack := 32 / g.Bits
	base := s.Name[:len(s.Name)-len("weight")]
	groups := ceilDiv(in, g.Group)
	return []safetensors.TensorInfo{
		{Name: base + "qweight", DType: safetensors.I32, Shape: []uint64{in / pack, out}},
		{Name: base + "qzeros", DType: safetensors.I32, Shape: []uint64{groups, out / pack}},
		{Name: base + "scales", DType: safetensors.F16, Shape: []uint64{groups, out}},
		{Name: base + "g_idx", DType: safetensors.I32, Shape: []uint64{in}},
	}
}

// Quantize is t (BF16 or F32 [out, in], both dimensions whole words of
// codes) quantized, in Layout's order.
func (g GPTQ) Quantize(t fixture.Tensor) []fixture.Tensor {
	out, in := t.Shape[0], t.Shape[1]
	pack, maxq := 32/g.Bits, float64(uint64(1)<<g.Bits-1)
	groups := ceilDiv(in, g.Group)
	vals := floats(t)
	qw, qz := make([]uint32, in/pack*out), make([]uint32, groups*(out/pack))
	scales := make([]float32, groups*out)
	mult := g.Mult
	if mult == 0 {
		mult = 1
	}
	for o := range out {
		for gi := range groups {
			c0, c1 := gi*g.Group, min((gi+1)*g.Group, in)
			xs := vals[o*in+c0 : o*in+c1]
			s, z := g.grid(xs, maxq)
			s16 := float16.Fromfloat32(s).Float32()
			scales[gi*out+o] = s16 * mult
			stored := uint32(z)
			if !g.V2 {
				stored-- // v1 stores zero − 1 (a zero of 0 wraps, as numpy's uint32 does)
			}
			qz[gi*(out/pack)+o/pack] |= stored & uint32(maxq) << (g.Bits * (o % pack))
			for i, x := range xs {
				q0 := max(0, min(maxq, math.RoundToEven(float64(x/s))+z))
				grid := s * float32(q0-z)
				q := max(0, min(maxq, math.RoundToEven(float64((grid+float32(z)*s)/s16))))
				c := c0 + uint64(i)
				qw[(c/pack)*out+o] |= uint32(q) << (g.Bits * (c % pack))
			}
		}
	}
	gidx := make([]uint32, in)
	for c := range gidx {
		gidx[c] = uint32(uint64(c) / g.Group)
	}
	l := g.Layout(fixture.Spec{Name: t.Name, Shape: t.Shape})
	data := [][]byte{words(qw), words(qz), fixture.Encode(scales, safetensors.F16), words(gidx)}
	res := make([]fixture.Tensor, len(l))
	for i, info := range l {
		res[i] = fixture.Tensor{Name: info.Name, DType: info.DType, Shape: info.Shape, Data: data[i]}
	}
	return res
}

// grid is a group's scale and zero (see GPTQ).
func (g GPTQ) grid(xs []float32, maxq float64) (scale float32, zero float64) {
	var lo, hi float32
	for _, x := range xs {
		lo, hi = min(lo, x), max(hi, x)
	}
	if !g.Asym {
		hi = max(-lo, hi)
		if lo < 0 {
			lo = -hi
		}
	}
	if lo == 0 && hi == 0 {
		lo, hi = -1, 1
	}
	scale = (hi - lo) / float32(maxq)
	if g.Asym {
		return scale, math.RoundToEven(float64(-lo / scale))
	}
	return scale, (maxq + 1) / 2
}

// words is ws as little-endian bytes.
func words(ws []uint32) []byte {
	b := make([]byte, 4*len(ws))
	for i, w := range ws {
		binary.LittleEndian.PutUint32(b[4*i:], w)
	}
	return b
}
