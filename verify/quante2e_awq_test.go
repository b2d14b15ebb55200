package verify

import (
	"math"
	"testing"

	"github.com/x448/float16"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// quantizeAWQ quantizes a BF16 [out, in] tensor as AutoAWQ's RTN does with
// zero points (casper-hansen/AutoAWQ awq/quantize/quantizer.py
// pseudo_quantize_tensor at 7ee28736ab85f95724eeab2598bf49b13b86439f:
// scale = (max − min).clamp(1e-5)/15 in F16, zero = clamp(−round(min/scale),
// 0, 15), q = clamp(round(x/scale) + zero, 0, 15)) and lays it out as
// WQLinear_GEMM.from_linear does (awq/modules/linear/gemm.py): qweight
// [in, out/8] and qzeros [in/group, out/8], eight output rows a word in
// order [0, 2, 4, 6, 1, 3, 5, 7], scales [in/group, out] F16, every
// scale stored mult times the faithful one and every zero zoff off.
func quantizeAWQ(t fixture.Tensor, group uint64, mult float32, zoff int32) []fixture.Tensor {
	return quantizeAWQValues(t.Name, sourceValues(t), t.Shape[0], t.Shape[1], group, mult, zoff)
}

// quantizeAWQValues is quantizeAWQ of the [out, in] values of the weight
// called name.
func quantizeAWQValues(name string, vals []float64, out, in, group uint64, mult float32, zoff int32) []fixture.Tensor {
	groups := in / group
	order := [8]uint64{0, 2, 4, 6, 1, 3, 5, 7}
	nibble := [8]uint64{} // the nibble of row j of a word: order's inverse
	for i, j := range order {
		nibble[j] = uint64(i)
	}
	qw, qz := make([]uint32, in*out/8), make([]uint32, groups*out/8)
	scales := make([]float32, groups*out)
	for o := range out {
		for g := range groups {
			xs := vals[o*in+g*group : o*in+(g+1)*group]
			lo, hi := xs[0], xs[0]
			for _, x := range xs {
				lo, hi = min(lo, x), max(hi, x)
			}
			s := float16.Fromfloat32(float32(max(hi-lo, 1e-5) / 15)).Float32()
			z := max(0, min(15, -math.RoundToEven(lo/float64(s))))
			scales[g*out+o] = s * mult
			qz[g*(out/8)+o/8] |= uint32(int32(z)+zoff) & 0xF << (4 * nibble[o%8])
			for i, x := range xs {
				q := uint32(max(0, min(15, math.RoundToEven(x/float64(s))+z)))
				c := g*group + uint64(i)
				qw[c*(out/8)+o/8] |= q << (4 * nibble[o%8])
			}
		}
	}
	return []fixture.Tensor{{Name: stem(name) + "qweight", DType: safetensors.I32, Shape: []uint64{in, out / 8}, Data: le32(qw)},
		{Name: stem(name) + "qzeros", DType: safetensors.I32, Shape: []uint64{groups, out / 8}, Data: le32(qz)},
		{Name: stem(name) + "scales", DType: safetensors.F16, Shape: []uint64{groups, out}, Data: fixture.Encode(scales, safetensors.F16)}}
}

// TestQuantE2EAWQ: AWQ GEMM int4 g32 on [40, 96] and [24, 64] weights,
// judged statistically: faithful passes; a scale ×2, zero points one off,
// another layer's weight, the zero points missing and a module of
// modules_to_not_convert quantized anyway fail.
func TestQuantE2EAWQ(t *testing.T) {
	norm := bf16Weights("model.norm.weight", 1, 96)
	src := []fixture.Tensor{norm, bf16Weights(qProj, 2, 40, 96), bf16Weights(kProj, 3, 24, 64)}
	config := func(skip ...string) map[string]any {
		return map[string]any{"model_type": "llama", "quantization_config": map[string]any{"quant_method": "awq", "bits": 4, "group_size": 32,
			"version": "gemm", "zero_point": true, "modules_to_not_convert": skip}}
	}
	cfg := config()
	quantized := func(mult float32, zoff int32) []fixture.Tensor {
		out := append([]fixture.Tensor{norm}, quantizeAWQ(src[1], 32, mult, zoff)...)
		return append(out, quantizeAWQ(src[2], 32, 1, 0)...)
	}
	checkJudgedBySteps(t, src, cfg, "statistical", func(mult float32) []fixture.Tensor { return quantized(mult, 0) })
	checkValidated(t, quantized(1, 0), cfg, []uint64{40, 96}, "AWQ int4 g32", nil)
	checkValidated(t, quantized(1, 0), config("q_proj"), []uint64{40, 96}, "AWQ int4 g32", []string{"warning quantized_config_mismatch " + qProj})
	other := quantized(1, 0)
	other[1].Data = quantizeAWQ(bf16Weights(qProj, 9, 40, 96), 32, 1, 0)[0].Data
	checkE2E(t, src, []e2eCase{
		{"zero points one off", quantized(1, 1), cfg, nil, []string{"error quantization_error " + qProj}},
		{"another layer's weight", other, cfg, nil, []string{"error quantization_error " + qProj, "error reinitialized " + qProj}},
		{"zero points missing", without(quantized(1, 0), stem(qProj)+"qzeros"), cfg, []string{"error quantized_scale_missing " + qProj, "warning quantized_unsupported "}, nil},
	})
}
