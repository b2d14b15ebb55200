package verify

import (
	"encoding/binary"
	"slices"
	"testing"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
)

// asGPTQv1 stores a GPTQ v2 export's zero points as the v1 format does,
// each one less, masked to its nibble (AutoGPTQ/AutoGPTQ
// auto_gptq/nn_modules/qlinear/qlinear_cuda_old.py pack at
// 179776bd1d97a2e7f84b72318630f43719647a11: zeros -= 1 before packing;
// forward adds 1 back after masking).
func asGPTQv1(tensors []fixture.Tensor) []fixture.Tensor {
	out := slices.Clone(tensors)
	for i, x := range out {
		if len(x.Name) < len("qzeros") || x.Name[len(x.Name)-len("qzeros"):] != "qzeros" {
			continue
		}
		data := slices.Clone(x.Data)
		for k := 0; k+4 <= len(data); k += 4 {
			w, v := binary.LittleEndian.Uint32(data[k:]), uint32(0)
			for n := range 8 {
				v |= (w>>(4*n) - 1) & 0xF << (4 * n)
			}
			binary.LittleEndian.PutUint32(data[k:], v)
		}
		out[i].Data = data
	}
	return out
}

// TestQuantE2EGPTQv1: the same GPTQ int4 weights stored in v1's format
// (zeros minus one, checkpoint_format "gptq") pass; v2's zeros under a v1
// config are the wrong zero offset, a quantization_error.
func TestQuantE2EGPTQv1(t *testing.T) {
	norm := bf16Weights("model.norm.weight", 1, 72)
	src := []fixture.Tensor{norm, bf16Weights(qProj, 2, 40, 64), bf16Weights(kProj, 3, 24, 192)}
	cfg := func(format string) map[string]any {
		return map[string]any{"model_type": "llama", "quantization_config": map[string]any{"quant_method": "gptq", "bits": 4, "group_size": 32, "checkpoint_format": format}}
	}
	v2 := append(append([]fixture.Tensor{norm}, gptqV2(32, 1).Quantize(src[1])...), gptqV2(32, 1).Quantize(src[2])...)
	v2k := append(append([]fixture.Tensor{norm}, asGPTQv1(gptqV2(32, 1).Quantize(src[1]))...), gptqV2(32, 1).Quantize(src[2])...)
	checkE2E(t, src, []e2eCase{
		{"v1", asGPTQv1(v2), cfg("gptq"), nil, nil},
		{"v2", v2, cfg("gptq_v2"), nil, nil},
		{"v2 zeros read as v1", v2, cfg("gptq"), nil, []string{"error quantization_error " + kProj, "error quantization_error " + qProj}},
		{"one weight's zeros one off", v2k, cfg("gptq_v2"), nil, []string{"error quantization_error " + qProj}},
	})
}
