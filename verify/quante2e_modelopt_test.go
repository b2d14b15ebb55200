package verify

import (
	"context"
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/quant"
	"github.com/ckptcheck/ckptcheck/safetensors"
	"github.com/ckptcheck/ckptcheck/verify/internal/values"
)

// TestQuantE2ENVFP4ModelOpt: ModelOpt's NVFP4 export (quantizeNVFP4 with
// weight_scale_2, which multiplies) on [40, 80] and [3, 48] weights:
// faithful passes with its config and, told by the dtypes, without one;
// weight_scale_2 ×2, the block scales missing and a module of
// exclude_modules quantized anyway fail.
func TestQuantE2ENVFP4ModelOpt(t *testing.T) {
	norm := bf16Weights("model.norm.weight", 1, 80)
	src := []fixture.Tensor{norm, bf16Weights(qProj, 2, 40, 80), bf16Weights(kProj, 3, 3, 48)}
	config := func(exclude ...string) map[string]any {
		return map[string]any{"model_type": "llama", "quantization_config": map[string]any{"quant_method": "modelopt", "quant_algo": "NVFP4",
			"group_size": 16, "exclude_modules": append([]string{"lm_head"}, exclude...)}}
	}
	cfg := config()
	quantized := func(mult float32) []fixture.Tensor {
		out := append([]fixture.Tensor{norm}, quantizeNVFP4(src[1], false, mult)...)
		return append(out, quantizeNVFP4(src[2], false, 1)...)
	}
	const enc = "NVFP4 (E2M1, F8_E4M3 scale per 16, scale_2 multiplies)"
	checkJudgedBySteps(t, src, cfg, "elementwise", quantized)
	checkValidated(t, quantized(1), cfg, []uint64{40, 80}, enc, nil)
	checkValidated(t, quantized(1), nil, []uint64{40, 80}, enc, nil)
	checkValidated(t, quantized(1), config("q_proj"), []uint64{40, 80}, enc, []string{"warning quantized_config_mismatch " + qProj})
	checkE2E(t, src, []e2eCase{
		{"no config", quantized(1), nil, nil, nil},
		{"block scales missing", without(quantized(1), stem(qProj)+"weight_scale"), cfg, []string{"error quantized_scale_missing " + qProj, "warning quantized_unsupported "}, nil},
	})
}

// quantizeMXFP4 quantizes gpt-oss experts, a BF16 [E, in, out] stack
// (transformers' GptOssExperts gate_up_proj / down_proj), as transformers'
// integrations/mxfp4.py quantize_to_mxfp4 does through triton_kernels'
// downcast_to_mxfp (huggingface/transformers at
// 93a1c400417fd8e89db9f42f8b2265e97265d75a; triton-lang/triton
// python/triton_kernels/triton_kernels/numerics_details/mxfp.py): each
// expert transposed to [out, in], blocks of 32 along in, the scale the
// power of two at or above amax/6 (its float32 exponent rounded up), the
// values x/scale to nearest E2M1, ties to even. X_blocks U8 [E, out, in/32,
// 16] (the low nibble first) and X_scales U8 [E, out, in/32] holding the
// biased exponents, each stored plus bump.
func quantizeMXFP4(t fixture.Tensor, bump byte) []fixture.Tensor {
	e, in, out := t.Shape[0], t.Shape[1], t.Shape[2]
	vals := sourceValues(t)
	groups := in / 32
	blocks, scales := make([]byte, e*out*in/2), make([]byte, e*out*groups)
	for x := range e {
		for o := range out {
			for g := range groups {
				amax := 0.0
				for i := g * 32; i < (g+1)*32; i++ {
					amax = max(amax, math.Abs(vals[(x*in+i)*out+o]))
				}
				bits := (math.Float32bits(float32(amax/6)) + 0x007FFFFF) & 0x7F800000
				exp := byte(bits >> 23)
				scale := math.Float32frombits(bits)
				k := (x*out + o) * groups
				scales[k+g] = exp + bump
				for i := g * 32; i < (g+1)*32; i++ {
					q := toE2M1(float64(float32(vals[(x*in+i)*out+o]) / scale))
					at := (k+g)*16 + (i-g*32)/2
					blocks[at] |= q << (4 * (i % 2))
				}
			}
		}
	}
	return []fixture.Tensor{{Name: t.Name + "_blocks", DType: safetensors.U8, Shape: []uint64{e, out, groups, 16}, Data: blocks},
		{Name: t.Name + "_scales", DType: safetensors.U8, Shape: []uint64{e, out, groups}, Data: scales}}
}

// TestQuantE2EMXFP4: gpt-oss experts [2, 64, 24] stored as MXFP4: the
// quantizer's blocks decode within half a step of the source; validate
// and inspect show one logical weight of the dequantized shape; diff
// --values reads the stored transpose band by band and judges it
// elementwise: faithful passes, scales ×2 and one expert's blocks in
// another's place fail.
func TestQuantE2EMXFP4(t *testing.T) {
	const experts = "model.layers.0.mlp.experts.gate_up_proj"
	norm := bf16Weights("model.norm.weight", 1, 64)
	w := bf16Weights(experts, 2, 2, 64, 24)
	src := []fixture.Tensor{norm, w}
	parts := quantizeMXFP4(w, 0)

	// The codec reads each expert as [out, in]: within half a step of the
	// source's transpose.
	d := quant.Dims{Rows: 2 * 24, Cols: 64}
	got := make([]float32, 2*24*64)
	if err := (quant.MXFP4{}).Decode(d, 0, d.Rows, [][]byte{parts[0].Data, parts[1].Data}, got); err != nil {
		t.Fatal(err)
	}
	vals := sourceValues(w)
	for i, v := range got {
		x, o, c := uint64(i)/(24*64), uint64(i)/64%24, uint64(i)%64
		scale := math.Ldexp(1, int(parts[1].Data[uint64(i)/32])-127)
		src := vals[(x*64+c)*24+o]
		step := scale * 0.5 // E2M1's spacing: 0.5 below 2, 1 below 4, 2 up to 6
		if a := max(math.Abs(float64(v)), math.Abs(src)) / scale; a >= 4 {
			step = scale * 2
		} else if a >= 2 {
			step = scale
		}
		if math.Abs(float64(v)-src) > step/2*(1+values.StepMargin) {
			t.Fatalf("expert %d [%d, %d]: %g, source %g, step %g", x, o, c, v, src, step)
		}
	}

	cfg := map[string]any{"model_type": "gpt_oss", "quantization_config": map[string]any{"quant_method": "mxfp4",
		"modules_to_not_convert": []string{"model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"}}}
	quantized := append([]fixture.Tensor{norm}, parts...)
	dir := export(t, quantized, cfg)
	fs, err := Validate(context.Background(), openCheckpoint(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	if got := quantFindings(fs); len(got) != 0 {
		t.Errorf("validate: %q", got)
	}
	ins := Inspect(openCheckpoint(t, dir), nil, false)
	i := slices.IndexFunc(ins.Tensors, func(r TensorRow) bool { return r.Name == experts })
	if i < 0 || !slices.Equal(ins.Tensors[i].Shape, []uint64{2, 64, 24}) || ins.Tensors[i].Encoding != "MXFP4 (E2M1, E8M0 scale per 32)" {
		t.Errorf("inspect: %+v", ins.Tensors)
	}
	fs, err = Validate(context.Background(), openCheckpoint(t, export(t, without(quantized, experts+"_scales"), cfg)))
	if got := quantFindings(fs); err != nil || !slices.Equal(got, []string{"error quantized_scale_missing " + experts}) {
		t.Errorf("validate, scales missing: %q, %v", got, err)
	}

	pub := filepath.Join(t.TempDir(), "published")
	if err := fixture.WriteSharded(pub, src, 1, nil); err != nil {
		t.Fatal(err)
	}
	cmp := diffPaths(t, pub, dir, DiffOptions{WeightsOnly: true})
	if x, _ := cmp.Exported.View.Tensor(experts); !decodes(x) {
		t.Fatalf("%s: not decoded", experts)
	}
	// The wrong expert: expert 1's blocks in expert 0's place and back,
	// their scales kept (unrelated values: reinitialized as well).
	swapped := append([]fixture.Tensor{norm}, quantizeMXFP4(w, 0)...)
	blocks := swapped[1].Data
	half := len(blocks) / 2
	for i := range half {
		blocks[i], blocks[half+i] = blocks[half+i], blocks[i]
	}
	checkE2E(t, src, []e2eCase{
		{"faithful", quantized, cfg, nil, nil},
		{"scale x2", append([]fixture.Tensor{norm}, quantizeMXFP4(w, 1)...), cfg, nil, []string{"error quantization_error " + experts}},
		{"experts swapped", swapped, cfg, nil, []string{"error quantization_error " + experts, "error reinitialized " + experts}},
	})

	// Bands of 32 logical rows (two an expert) or one band an expert:
	// judged elementwise, within half a step.
	defer values.SetBlocking(0, 0)()
	for _, tile := range []uint64{1, 8 << 20} {
		values.SetBlocking(16, tile)
		rep, err := diffPaths(t, pub, dir, DiffOptions{WeightsOnly: true}).CompareValues(context.Background(), ValueOptions{})
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(rep.Tensors, func(s TensorStats) bool { return s.Key == experts })
		if got := notable(rep.Findings); len(got) != 0 || i < 0 {
			t.Fatalf("tile %d: %q", tile, got)
		}
		if q := rep.Tensors[i].Quantization; q == nil || q.Bound != "elementwise" || !q.Within || q.Outside != 0 || !(q.MaxStepRatio <= 1) {
			t.Errorf("tile %d: %+v", tile, rep.Tensors[i])
		}
	}
}
