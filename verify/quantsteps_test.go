package verify

import (
	"context"
	"encoding/binary"
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/internal/quantfixture"
	"github.com/ckptcheck/ckptcheck/quant"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// TestQuantValuesBlockFP8: a block-FP8 export (quant_method "fp8", blocks
// 16×16 that do not divide the shape) judged by its steps: faithful passes,
// one weight's scales ×2 is a quantization_error.
func TestQuantValuesBlockFP8(t *testing.T) {
	norm := bf16Weights("model.norm.weight", 1, 72)
	src := []fixture.Tensor{norm, bf16Weights(qProj, 2, 40, 72), bf16Weights(kProj, 3, 24, 200)}
	cfg := map[string]any{"model_type": "llama", "quantization_config": map[string]any{"quant_method": "fp8", "weight_block_size": []int{16, 16}}}
	checkJudgedBySteps(t, src, cfg, "elementwise", func(mult float32) []fixture.Tensor {
		out := []fixture.Tensor{norm}
		for i, x := range src[1:] {
			m := float32(1)
			if i == 0 {
				m = mult
			}
			out = append(out, quantfixture.BlockFP8{Rows: 16, Cols: 16, Mult: m}.Quantize(x)...)
		}
		return out
	})
}

// quantizeMLX quantizes a BF16 [rows, cols] tensor to mlx's 4-bit affine
// grid in groups of group (bias the group's minimum, scale (max − min)/15
// rounded up to BF16, q = round((x − bias)/scale)), every scale stored mult
// times the faithful one: weight, scales and biases.
func quantizeMLX(t fixture.Tensor, group uint64, mult float32) []fixture.Tensor {
	rows, cols := t.Shape[0], t.Shape[1]
	vals := make([]float64, rows*cols)
	quant.DecodeFloat64(t.DType, t.Data, vals)
	words := make([]uint32, rows*cols/8)
	var scales, biases []float32
	for g := uint64(0); g < rows*cols; g += group {
		xs := vals[g : g+group]
		lo, hi := slices.Min(xs), slices.Max(xs)
		b := bf16Up(float32(lo), false)
		s := bf16Up(float32((hi-float64(b))/15), true)
		for i, x := range xs {
			q := uint32(max(0, min(15, math.Round((x-float64(b))/float64(s)))))
			k := g + uint64(i)
			words[k/8] |= q << (4 * (k % 8))
		}
		scales, biases = append(scales, s*mult), append(biases, b)
	}
	var wb []byte
	for _, w := range words {
		wb = binary.LittleEndian.AppendUint32(wb, w)
	}
	gs := []uint64{rows, cols / group}
	return []fixture.Tensor{{Name: t.Name, DType: safetensors.U32, Shape: []uint64{rows, cols / 8}, Data: wb},
		{Name: t.Name[:len(t.Name)-len("weight")] + "scales", DType: safetensors.BF16, Shape: gs, Data: fixture.Encode(scales, safetensors.BF16)},
		{Name: t.Name[:len(t.Name)-len("weight")] + "biases", DType: safetensors.BF16, Shape: gs, Data: fixture.Encode(biases, safetensors.BF16)}}
}

// bf16Up is v rounded to BF16 upward (up) or downward: a scale that
// cannot clamp the top code, a bias at or below the group's minimum.
// Truncation rounds toward zero; one BF16 step away from zero corrects it.
func bf16Up(v float32, up bool) float32 {
	b := math.Float32bits(v) &^ 0xFFFF
	if t := math.Float32frombits(b); (up && t < v) || (!up && t > v) {
		b += 0x10000
	}
	return math.Float32frombits(b)
}

// TestQuantValuesMLX: an mlx-lm 4-bit export judged by its steps: faithful
// passes, one weight's scales ×2 is a quantization_error.
func TestQuantValuesMLX(t *testing.T) {
	norm := bf16Weights("model.norm.weight", 1, 72)
	src := []fixture.Tensor{norm, bf16Weights(qProj, 2, 40, 64), bf16Weights(kProj, 3, 24, 192)}
	cfg := map[string]any{"model_type": "llama", "quantization": map[string]any{"group_size": 32, "bits": 4}}
	checkJudgedBySteps(t, src, cfg, "elementwise", func(mult float32) []fixture.Tensor {
		out := append([]fixture.Tensor{norm}, quantizeMLX(src[1], 32, mult)...)
		return append(out, quantizeMLX(src[2], 32, 1)...)
	})
}

// gptqV2 is asymmetric GPTQ int4 in groups of group, v2 zeros, rounded to
// the grid (AutoGPTQ's RTN), every scale stored mult times the faithful one.
func gptqV2(group uint64, mult float32) quantfixture.GPTQ {
	return quantfixture.GPTQ{Bits: 4, Group: group, Asym: true, V2: true, Mult: mult}
}

// TestQuantValuesGPTQ: a GPTQ int4 export, judged statistically by its
// steps: faithful passes, one weight's scales ×2 is a quantization_error.
func TestQuantValuesGPTQ(t *testing.T) {
	norm := bf16Weights("model.norm.weight", 1, 72)
	src := []fixture.Tensor{norm, bf16Weights(qProj, 2, 40, 64), bf16Weights(kProj, 3, 24, 192)}
	cfg := map[string]any{"model_type": "llama", "quantization_config": map[string]any{"quant_method": "gptq", "bits": 4, "group_size": 32, "checkpoint_format": "gptq_v2"}}
	checkJudgedBySteps(t, src, cfg, "statistical", func(mult float32) []fixture.Tensor {
		out := append([]fixture.Tensor{norm}, gptqV2(32, mult).Quantize(src[1])...)
		return append(out, gptqV2(32, 1).Quantize(src[2])...)
	})
}

// checkJudgedBySteps exports quantized(mult) against src published as is,
// and checks that mult 1 passes and mult 2 (one weight's scales doubled)
// is qProj's quantization_error, both sides judged by bound.
func checkJudgedBySteps(t *testing.T, src []fixture.Tensor, cfg map[string]any, bound string, quantized func(mult float32) []fixture.Tensor) {
	t.Helper()
	pub := filepath.Join(t.TempDir(), "published")
	if err := fixture.WriteSharded(pub, src, 1, nil); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		mult float32
		want []string
	}{
		{"faithful", 1, nil},
		{"scale x2", 2, []string{"error quantization_error " + qProj}},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := diffPaths(t, pub, export(t, quantized(c.mult), cfg), DiffOptions{WeightsOnly: true})
			if got := notable(d.Findings); len(got) != 0 {
				t.Fatalf("structure: %v", d.Findings)
			}
			rep, err := d.CompareValues(context.Background(), ValueOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := notable(rep.Findings); !slices.Equal(got, c.want) {
				t.Errorf("findings %q, want %q", got, c.want)
			}
			for _, s := range rep.Tensors {
				if (s.Key == qProj || s.Key == kProj) && (s.Quantization == nil || s.Quantization.Bound != bound) {
					t.Errorf("%s: %+v", s.Key, s)
				}
			}
		})
	}
}
