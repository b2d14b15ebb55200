package verify

import (
	"testing"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
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
