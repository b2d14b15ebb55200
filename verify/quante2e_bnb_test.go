package verify

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"testing"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// End-to-end fixtures of bitsandbytes as transformers' save_pretrained
// writes it, by a test-side quantizer from bitsandbytes-foundation/
// bitsandbytes at 95f9af309d4d5793847169c39288dcd3fcbdf564:
// bitsandbytes/functional.py quantize_4bit (absmax a block, then with
// compress_statistics offset = absmax.mean() and quantize_blockwise(absmax
// − offset, blocksize=256) over create_dynamic_map()), csrc/kernels.cu
// kQuantizeBlockwise (dQuantizeNF4, dQuantizeFP4: the nearest code of
// x/absmax, the sign of FP4 in bit 3), QuantState.as_dict(packed=True) and
// utils.py pack_dict_to_tensor; int8_vectorwise_quant (SCB the row's
// absmax, round(x · 127/SCB)).

// nf4Grid is csrc/kernels.cu's nf4_dequantization_lut.
var nf4Grid = []float64{-1, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453, -0.28444138169288635,
	-0.18477343022823334, -0.09105003625154495, 0, 0.07958029955625534, 0.16093020141124725, 0.24611230194568634,
	0.33791524171829224, 0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1}

// fp4Grid is fp4_dequantization_lut with its sign bit.
var fp4Grid = func() []float64 {
	lut := []float64{0, 0.005208333333, 0.66666667, 1, 0.33333333, 0.5, 0.16666667, 0.25}
	out := slices.Clone(lut)
	for _, v := range lut {
		out = append(out, -v)
	}
	return out
}()

// dynamicMap is create_dynamic_map(signed=True, max_exponent_bits=7,
// total_bits=8): for i in 0..6, the midpoints of linspace(0.1, 1, 2^i + 1)
// times ±10^(i−6), then 0 and 1, sorted.
func dynamicMap() []float32 {
	var data []float32
	for i := range 7 {
		n := 1<<i + 1
		for k := range n - 1 {
			lo, hi := float32(0.1+0.9*float64(k)/float64(n-1)), float32(0.1+0.9*float64(k+1)/float64(n-1))
			m := (lo + hi) / 2
			data = append(data, float32(math.Pow10(i-6))*m, -float32(math.Pow10(i-6))*m)
		}
	}
	data = append(data, 0, 1)
	slices.Sort(data)
	return data
}

// nearest is the index of the code nearest x.
func nearest[T float32 | float64](codes []T, x float64) int {
	best := 0
	for i, c := range codes {
		if math.Abs(float64(c)-x) < math.Abs(float64(codes[best])-x) {
			best = i
		}
	}
	return best
}

// quantizeBNB4 quantizes a BF16 tensor to NF4 (or FP4) in blocks of 64,
// with double quantization when double, every (nested) absmax stored mult
// times the faithful one: weight U8 [⌈n/2⌉, 1] (the first value in the high
// nibble), absmax, quant_map, nested_absmax, nested_quant_map and the
// quant state.
func quantizeBNB4(t fixture.Tensor, fp4, double bool, mult float32) []fixture.Tensor {
	const block, nested = 64, 256
	vals := sourceValues(t)
	n := uint64(len(vals))
	grid, kind := nf4Grid, "nf4"
	if fp4 {
		grid, kind = fp4Grid, "fp4"
	}
	absmax := blockAmax(vals, n, block)
	packed := make([]byte, (n+1)/2)
	for i, x := range vals {
		q := byte(nearest(grid, float64(float32(x)*(1/float32(absmax[i/block])))))
		if fp4 && math.Signbit(x) {
			q |= 8 // dQuantizeFP4 keeps the sign of a value that rounds to zero
		}
		packed[i/2] |= q << (4 * (1 - i%2))
	}
	quantMap := make([]float32, 16)
	for i, v := range grid {
		quantMap[i] = float32(v)
	}
	data := fixture.Tensor{Name: t.Name, DType: safetensors.U8, Shape: []uint64{(n + 1) / 2, 1}, Data: packed}
	if !double {
		abs := make([]float32, len(absmax))
		for i, a := range absmax {
			abs[i] = float32(a) * mult
		}
		state := fmt.Sprintf(`{"quant_type": %q, "blocksize": %d, "dtype": "bfloat16", "shape": [%d, %d]}`, kind, block, t.Shape[0], t.Shape[1])
		return []fixture.Tensor{data, f32Tensor(t.Name+".absmax", abs, uint64(len(abs))), f32Tensor(t.Name+".quant_map", quantMap, 16),
			jsonTensor(t.Name+".quant_state.bitsandbytes__"+kind, state)}
	}
	var sum float32
	for _, a := range absmax {
		sum += float32(a)
	}
	offset := sum / float32(len(absmax))
	code := dynamicMap()
	shifted := make([]float64, len(absmax))
	for i, a := range absmax {
		shifted[i] = float64(float32(a) - offset)
	}
	amax2 := blockAmax(shifted, uint64(len(shifted)), nested)
	qabs := make([]byte, len(shifted))
	for i, a := range shifted {
		qabs[i] = byte(nearest(code, a/amax2[i/nested]))
	}
	nestedAbs := make([]float32, len(amax2))
	for i, a := range amax2 {
		nestedAbs[i] = float32(a) * mult
	}
	state := fmt.Sprintf(`{"quant_type": %q, "blocksize": %d, "dtype": "bfloat16", "shape": [%d, %d], "nested_blocksize": %d, "nested_dtype": "float32", "nested_offset": %s}`,
		kind, block, t.Shape[0], t.Shape[1], nested, strconv.FormatFloat(float64(offset), 'g', -1, 64))
	return []fixture.Tensor{data,
		{Name: t.Name + ".absmax", DType: safetensors.U8, Shape: []uint64{uint64(len(qabs))}, Data: qabs},
		f32Tensor(t.Name+".quant_map", quantMap, 16),
		f32Tensor(t.Name+".nested_absmax", nestedAbs, uint64(len(nestedAbs))),
		f32Tensor(t.Name+".nested_quant_map", code, 256),
		jsonTensor(t.Name+".quant_state.bitsandbytes__"+kind, state)}
}

// bnbConfig is a quantization_config of bitsandbytes 4-bit (or 8-bit).
func bnbConfig(fourBit bool, kind string, skip ...string) map[string]any {
	qc := map[string]any{"quant_method": "bitsandbytes", "load_in_4bit": fourBit, "load_in_8bit": !fourBit,
		"bnb_4bit_quant_type": kind, "bnb_4bit_use_double_quant": true, "bnb_4bit_compute_dtype": "bfloat16",
		"llm_int8_skip_modules": append([]string{"lm_head"}, skip...)}
	return map[string]any{"model_type": "llama", "quantization_config": qc}
}

// TestQuantE2EBNB4: NF4 and FP4 with double quantization on [24, 50] and
// [7, 33] weights (blocks of 64 and the nested block of 256 partial, an odd
// number of values): the shape and block size come from the quant state's
// JSON in the data. Faithful passes; the nested absmax ×2, the absmax
// missing, a quant state that disagrees with the header and a skipped
// module quantized anyway fail.
func TestQuantE2EBNB4(t *testing.T) {
	norm := bf16Weights("model.norm.weight", 1, 50)
	src := []fixture.Tensor{norm, bf16Weights(qProj, 2, 24, 50), bf16Weights(kProj, 3, 7, 33)}
	for _, fp4 := range []bool{false, true} {
		kind := map[bool]string{false: "nf4", true: "fp4"}[fp4]
		t.Run(kind, func(t *testing.T) {
			cfg := bnbConfig(true, kind)
			quantized := func(mult float32) []fixture.Tensor {
				out := append([]fixture.Tensor{norm}, quantizeBNB4(src[1], fp4, true, mult)...)
				return append(out, quantizeBNB4(src[2], fp4, true, 1)...)
			}
			checkJudgedBySteps(t, src, cfg, "elementwise", quantized)
			enc := fmt.Sprintf("bitsandbytes %s block 64 (double quant)", map[bool]string{false: "NF4", true: "FP4"}[fp4])
			checkValidated(t, quantized(1), cfg, []uint64{24, 50}, enc, nil)
			checkValidated(t, quantized(1), bnbConfig(true, kind, "q_proj"), []uint64{24, 50}, enc, []string{"warning quantized_config_mismatch " + qProj})
			bad := quantized(1)
			state := qProj + ".quant_state.bitsandbytes__" + kind
			i := slices.IndexFunc(bad, func(x fixture.Tensor) bool { return x.Name == state })
			bad[i] = jsonTensor(state, `{"quant_type": "`+kind+`", "blocksize": 64, "dtype": "bfloat16", "shape": [24, 60], "nested_blocksize": 256, "nested_dtype": "float32", "nested_offset": 0.01}`)
			checkValidated(t, bad, cfg, []uint64{24, 60}, enc, []string{"error quantized_scale_shape " + qProj})
			bad[i] = jsonTensor(state, `{"quant_type": "nf8"}`)
			checkValidated(t, bad, cfg, []uint64{600, 1}, "bitsandbytes 4-bit (quant_state not read)", []string{"error quantized_scale_shape " + qProj})
			checkE2E(t, src, []e2eCase{
				{"absmax missing", without(quantized(1), qProj+".absmax"), cfg, []string{"error quantized_scale_missing " + qProj, "warning quantized_unsupported "}, nil},
			})
		})
	}
}

// TestQuantE2EBNB4Single: NF4 without double quantization (absmax F32),
// on the shapes of TestQuantE2EBNB4: faithful passes, absmax ×2 fails.
func TestQuantE2EBNB4Single(t *testing.T) {
	norm := bf16Weights("model.norm.weight", 1, 50)
	src := []fixture.Tensor{norm, bf16Weights(qProj, 2, 24, 50), bf16Weights(kProj, 3, 7, 33)}
	cfg := bnbConfig(true, "nf4")
	quantized := func(mult float32) []fixture.Tensor {
		out := append([]fixture.Tensor{norm}, quantizeBNB4(src[1], false, false, mult)...)
		return append(out, quantizeBNB4(src[2], false, false, 1)...)
	}
	checkJudgedBySteps(t, src, cfg, "elementwise", quantized)
	checkValidated(t, quantized(1), cfg, []uint64{24, 50}, "bitsandbytes NF4 block 64", nil)
}

// quantizeInt8 quantizes a BF16 [rows, cols] tensor as LLM.int8()
// (int8_vectorwise_quant): SCB the row's absmax, w = round(x · (127/SCB))
// in float32; SCB stored mult times the faithful one.
func quantizeInt8(t fixture.Tensor, mult float32) []fixture.Tensor {
	rows, cols := t.Shape[0], t.Shape[1]
	vals := sourceValues(t)
	scb := make([]float32, rows)
	data := make([]byte, len(vals))
	for r, a := range blockAmax(vals, cols, cols) {
		scb[r] = float32(a)
		inv := 127 / scb[r]
		for c := range cols {
			data[uint64(r)*cols+c] = byte(int8(math.RoundToEven(float64(float32(vals[uint64(r)*cols+c]) * inv))))
		}
		scb[r] *= mult
	}
	return []fixture.Tensor{{Name: t.Name, DType: safetensors.I8, Shape: t.Shape, Data: data},
		f32Tensor(stem(t.Name)+"SCB", scb, rows),
		{Name: stem(t.Name) + "weight_format", DType: safetensors.U8, Shape: []uint64{}, Data: []byte{0}}}
}

// TestQuantE2EInt8: LLM.int8() on [40, 72] and [3, 200] weights: faithful
// passes, SCB ×2 fails, SCB missing fails, another layer's weight fails.
func TestQuantE2EInt8(t *testing.T) {
	norm := bf16Weights("model.norm.weight", 1, 72)
	src := []fixture.Tensor{norm, bf16Weights(qProj, 2, 40, 72), bf16Weights(kProj, 3, 3, 200)}
	cfg := bnbConfig(false, "fp4")
	quantized := func(mult float32) []fixture.Tensor {
		out := append([]fixture.Tensor{norm}, quantizeInt8(src[1], mult)...)
		return append(out, quantizeInt8(src[2], 1)...)
	}
	checkJudgedBySteps(t, src, cfg, "elementwise", quantized)
	checkValidated(t, quantized(1), cfg, []uint64{40, 72}, "int8 row-wise (LLM.int8)", nil)
	other := quantized(1)
	other[1].Data = quantizeInt8(bf16Weights(qProj, 9, 40, 72), 1)[0].Data
	checkE2E(t, src, []e2eCase{
		{"another layer's weight", other, cfg, nil, []string{"error quantization_error " + qProj, "error reinitialized " + qProj}},
		{"SCB missing", without(quantized(1), stem(qProj)+"SCB"), cfg, []string{"error quantized_scale_missing " + qProj, "warning quantized_unsupported "}, nil},
	})
}
