package verify

import (
	"math"
	"slices"
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
			// q_proj's zero points and weight_shape in the first of three
			// shards, its packed weight and scales in the last: found
			// through the index. (quantized: norm, q's packed, scale,
			// shape, zero points, then k's.)
			q := quantized(1, 0)
			moved := slices.Concat(q[:1], []fixture.Tensor{q[4], q[3]}, q[5:], q[1:3])
			checkE2E(t, src, []e2eCase{
				{"companions in another shard, sharded", moved, cfg, nil, nil},
				{"zero point off by one", quantized(1, -1), cfg, nil, []string{"error quantization_error " + qProj}},
				{"zero points missing", without(quantized(1, 0), stem(qProj)+"weight_zero_point"), cfg,
					[]string{"error quantized_scale_missing " + qProj, "warning quantized_unsupported "}, nil},
			})
		})
	}
}

// quantizeNVFP4 quantizes a BF16 [rows, cols] tensor to NVFP4 (blocks of
// 16 along a row). divide selects compressed-tensors' layout: global scale
// g = 448·6/amax (generate_gparam), block scale e4m3(g · amax_block/6),
// x_q = e2m1(x / (scale/g)); weight_packed, weight_scale,
// weight_global_scale. Otherwise ModelOpt's (modelopt/torch/quantization/
// qtensor/nvfp4_tensor.py get_weights_scaling_factor and quantize at
// 211c6b3413c52b2fd7a671eda3ce8b2139a4fedd): scale_2 = amax/(6·448),
// block scale e4m3(amax_block/(6·scale_2)), x_q = e2m1(x / (scale ·
// scale_2)); weight, weight_scale, weight_scale_2. Two codes a byte, the
// low nibble first; the global scale is stored mult times the faithful one.
func quantizeNVFP4(t fixture.Tensor, divide bool, mult float32) []fixture.Tensor {
	rows, cols := t.Shape[0], t.Shape[1]
	vals := sourceValues(t)
	amax := 0.0
	for _, v := range vals {
		amax = max(amax, math.Abs(v))
	}
	global := float32(amax / (6 * 448))
	if divide {
		global = float32(448 * 6 / amax)
	}
	blocks := blockAmax(vals, cols, 16)
	scales := make([]byte, len(blocks))
	for i, a := range blocks {
		if divide {
			scales[i] = toE4M3(float64(global * float32(a/6)))
		} else {
			scales[i] = toE4M3(float64(float32(a/6) / global))
		}
	}
	packed := make([]byte, rows*cols/2)
	for i, x := range vals {
		s := float32(e4m3Values[scales[uint64(i)/16]])
		if divide {
			s /= global
		} else {
			s *= global
		}
		q := toE2M1(float64(float32(x) / s))
		packed[i/2] |= q << (4 * (i % 2))
	}
	data, scale2 := "weight", "weight_scale_2"
	if divide {
		data, scale2 = "weight_packed", "weight_global_scale"
	}
	return []fixture.Tensor{{Name: stem(t.Name) + data, DType: safetensors.U8, Shape: []uint64{rows, cols / 2}, Data: packed},
		{Name: stem(t.Name) + "weight_scale", DType: safetensors.F8_E4M3, Shape: []uint64{rows, cols / 16}, Data: scales},
		f32Tensor(stem(t.Name)+scale2, []float32{global * mult}, 1)}
}

// TestQuantE2ENVFP4CompressedTensors: nvfp4-pack-quantized, whose global
// scale divides, on [40, 80] and [3, 48] weights: faithful passes; the
// global scale ×2, or a scale missing, fails.
func TestQuantE2ENVFP4CompressedTensors(t *testing.T) {
	norm := bf16Weights("model.norm.weight", 1, 80)
	src := []fixture.Tensor{norm, bf16Weights(qProj, 2, 40, 80), bf16Weights(kProj, 3, 3, 48)}
	cfg := ctConfig("nvfp4-pack-quantized", map[string]any{"num_bits": 4, "type": "float", "symmetric": true, "strategy": "tensor_group", "group_size": 16})
	quantized := func(mult float32) []fixture.Tensor {
		out := append([]fixture.Tensor{norm}, quantizeNVFP4(src[1], true, mult)...)
		return append(out, quantizeNVFP4(src[2], true, 1)...)
	}
	checkJudgedBySteps(t, src, cfg, "elementwise", quantized)
	checkValidated(t, quantized(1), cfg, []uint64{40, 80}, "NVFP4 (E2M1, F8_E4M3 scale per 16, global scale divides)", nil)
	checkValidated(t, without(quantized(1), stem(qProj)+"weight_scale"), cfg, []uint64{40, 80}, "NVFP4 (E2M1, F8_E4M3 scale per 16, global scale divides)",
		[]string{"error quantized_scale_missing " + qProj})
}

// quantizeChannelFP8 quantizes a BF16 [rows, cols] tensor to F8_E4M3 with
// one BF16 scale a row, as calculate_qparams and _quantize do for the
// float-quantized "channel" strategy: scale = max(|min|, max)/448 in BF16,
// x_q = e4m3(clamp(x/scale, ±448)) with x/scale rounded to BF16 first;
// every scale stored mult times the faithful one.
func quantizeChannelFP8(t fixture.Tensor, mult float32) []fixture.Tensor {
	rows, cols := t.Shape[0], t.Shape[1]
	vals := sourceValues(t)
	amax := blockAmax(vals, cols, cols)
	scales := make([]float32, rows)
	data := make([]byte, len(vals))
	for r, a := range amax {
		scales[r] = roundBF16(float32(a / 448))
		for c := range cols {
			data[uint64(r)*cols+c] = toE4M3(float64(roundBF16(float32(vals[uint64(r)*cols+c]) / scales[r])))
		}
		scales[r] *= mult
	}
	return []fixture.Tensor{{Name: t.Name, DType: safetensors.F8_E4M3, Shape: t.Shape, Data: data},
		{Name: stem(t.Name) + "weight_scale", DType: safetensors.BF16, Shape: []uint64{rows, 1}, Data: fixture.Encode(scales, safetensors.BF16)}}
}

// TestQuantE2EChannelFP8: float-quantized FP8 per channel on [41, 75] and
// [3, 200] weights: faithful passes, a scale ×2 fails, another layer's
// weight fails, and a module of the ignore list quantized anyway is a
// quantized_config_mismatch.
func TestQuantE2EChannelFP8(t *testing.T) {
	norm := bf16Weights("model.norm.weight", 1, 75)
	src := []fixture.Tensor{norm, bf16Weights(qProj, 2, 41, 75), bf16Weights(kProj, 3, 3, 200)}
	weights := map[string]any{"num_bits": 8, "type": "float", "symmetric": true, "strategy": "channel"}
	cfg := ctConfig("float-quantized", weights)
	quantized := func(mult float32) []fixture.Tensor {
		out := append([]fixture.Tensor{norm}, quantizeChannelFP8(src[1], mult)...)
		return append(out, quantizeChannelFP8(src[2], 1)...)
	}
	checkJudgedBySteps(t, src, cfg, "elementwise", quantized)
	const enc = "F8_E4M3 per-channel (BF16 scale)"
	checkValidated(t, quantized(1), cfg, []uint64{41, 75}, enc, nil)
	ignored := ctConfig("float-quantized", weights, "re:.*q_proj$")
	checkValidated(t, quantized(1), ignored, []uint64{41, 75}, enc, []string{"warning quantized_config_mismatch " + qProj})
	other := quantized(1)
	other[1].Data = quantizeChannelFP8(bf16Weights(qProj, 9, 41, 75), 1)[0].Data // layer 9's codes under layer 0's scales
	checkE2E(t, src, []e2eCase{
		{"another layer's weight", other, cfg, nil, []string{"error quantization_error " + qProj, "error reinitialized " + qProj}},
		{"ignored yet quantized", quantized(1), ignored, []string{"warning quantized_config_mismatch " + qProj}, nil},
	})
}
