package verify

import (
	"math"
	"testing"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// End-to-end fixtures of compressed-tensors' formats (llm-compressor's
// output), each written by a test-side quantizer from the upstream code:
// vllm-project/compressed-tensors src/compressed_tensors/quantization/
// utils/helpers.py calculate_qparams and quantization/lifecycle/forward.py
// _quantize at 01dd1a58d39e47c617df54aaa4519a30273be0c5;
// compressors/quantized_compressors/pack_quantized.py pack_to_int32 at
// 179cba93043885b3b7bcc3b1ecea0793b888ed67; fp4_quantized.py
// pack_fp4_to_uint8 and utils/helpers.py generate_gparam at
// 0c9d5c7eb6d30af4c0ff45783fc6e47f594ff993.

// ctConfig is a quantization_config of one config group over the Linear
// layers, lm_head ignored.
func ctConfig(format string, weights map[string]any, ignore ...string) map[string]any {
	return map[string]any{"model_type": "llama", "quantization_config": map[string]any{
		"quant_method": "compressed-tensors", "format": format, "ignore": append([]string{"lm_head"}, ignore...),
		"config_groups": map[string]any{"group_0": map[string]any{"targets": []string{"Linear"}, "weights": weights}}}}
}

// quantizePacked quantizes a BF16 [rows, cols] tensor to int4 in groups of
// group columns (a partial last group when they do not divide), as
// calculate_qparams and _quantize do in BF16: min and max widened to 0;
// symmetric scale max(|min|, max)/7.5, zero 0; asymmetric scale
// (max − min)/15, zero round(clamp(−8 − min/scale, −8, 7)); q =
// round(clamp(x/scale + zero, −8, 7)), each BF16 operation rounded. Codes
// and zero points are packed as pack_to_int32 does (q + 8, eight a word,
// the zero points along the rows); every scale is stored mult times the
// faithful one and every zero point zoff off.
func quantizePacked(t fixture.Tensor, group uint64, sym bool, mult float32, zoff int32) []fixture.Tensor {
	rows, cols := t.Shape[0], t.Shape[1]
	vals := sourceValues(t)
	groups, words := (cols+group-1)/group, (cols+7)/8
	qw, zw := make([]uint32, rows*words), make([]uint32, (rows+7)/8*groups)
	scales := make([]float32, rows*groups)
	for r := range rows {
		for g := range groups {
			xs := vals[r*cols+g*group : r*cols+min((g+1)*group, cols)]
			lo, hi := 0.0, 0.0
			for _, x := range xs {
				lo, hi = min(lo, x), max(hi, x)
			}
			var s, z float32
			if sym {
				s = roundBF16(float32(max(-lo, hi) / 7.5))
			} else {
				s = roundBF16(float32((hi - lo) / 15))
				z = float32(math.RoundToEven(max(-8, min(7, float64(roundBF16(-8-roundBF16(float32(lo)/s)))))))
			}
			scales[r*groups+g] = s * mult
			zw[(r/8)*groups+g] |= uint32(int32(z)+8+zoff) & 0xF << (4 * (r % 8))
			for i, x := range xs {
				v := roundBF16(roundBF16(float32(x)/s) + z)
				q := int32(math.RoundToEven(max(-8, min(7, float64(v)))))
				c := g*group + uint64(i)
				qw[r*words+c/8] |= uint32(q+8) << (4 * (c % 8))
			}
		}
	}
	out := []fixture.Tensor{{Name: stem(t.Name) + "weight_packed", DType: safetensors.I32, Shape: []uint64{rows, words}, Data: le32(qw)},
		{Name: stem(t.Name) + "weight_scale", DType: safetensors.BF16, Shape: []uint64{rows, groups}, Data: fixture.Encode(scales, safetensors.BF16)},
		i64Tensor(stem(t.Name)+"weight_shape", int64(rows), int64(cols))}
	if !sym {
		out = append(out, fixture.Tensor{Name: stem(t.Name) + "weight_zero_point", DType: safetensors.I32, Shape: []uint64{(rows + 7) / 8, groups}, Data: le32(zw)})
	}
	return out
}

// TestQuantE2EPackQuantized: pack-quantized int4 g32, symmetric and
// asymmetric (zero points packed), on [40, 100] and [41, 100] weights
// whose groups and words do not divide the rows or columns; weight_shape,
// in the data, gives the logical shape.
func TestQuantE2EPackQuantized(t *testing.T) {
	norm := bf16Weights("model.norm.weight", 1, 100)
	for _, sym := range []bool{true, false} {
		src := []fixture.Tensor{norm, bf16Weights(qProj, 2, 40, 100), bf16Weights(kProj, 3, 41, 100)}
		cfg := ctConfig("pack-quantized", map[string]any{"num_bits": 4, "type": "int", "symmetric": sym, "strategy": "group", "group_size": 32})
		quantized := func(mult float32, zoff int32) []fixture.Tensor {
			out := append([]fixture.Tensor{norm}, quantizePacked(src[1], 32, sym, mult, zoff)...)
			return append(out, quantizePacked(src[2], 32, sym, 1, 0)...)
		}
		name := map[bool]string{true: "sym", false: "asym"}[sym]
		t.Run(name, func(t *testing.T) {
			checkJudgedBySteps(t, src, cfg, "elementwise", func(mult float32) []fixture.Tensor { return quantized(mult, 0) })
			checkValidated(t, quantized(1, 0), cfg, []uint64{40, 100}, "pack-quantized int4 g32 "+name, nil)
			bad := quantized(1, 0)
			bad[3] = i64Tensor(stem(qProj)+"weight_shape", 40, 132) // 17 words a row, the header has 13
			checkValidated(t, bad, cfg, []uint64{40, 132}, "pack-quantized int4 g32 "+name, []string{"error quantized_scale_shape " + qProj})
			if sym {
				return
			}
			checkE2E(t, src, []e2eCase{
				{"zero point off by one", quantized(1, -1), cfg, nil, []string{"error quantization_error " + qProj}},
				{"zero points missing", without(quantized(1, 0), stem(qProj)+"weight_zero_point"), cfg,
					[]string{"error quantized_scale_missing " + qProj, "warning quantized_unsupported "}, nil},
			})
		})
	}
}
