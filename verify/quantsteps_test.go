package verify

import (
	"context"
	"encoding/binary"
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/quant"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// quantizeBlockFP8 quantizes a BF16 [rows, cols] tensor as DeepSeek-V3's
// block quantizer does (scale_inv = amax/448 a block of br × bc, x_q =
// e4m3(x / scale_inv)), with every scale stored mult times the faithful
// one: the weight and its weight_scale_inv.
func quantizeBlockFP8(t fixture.Tensor, br, bc uint64, mult float32) (w, scale fixture.Tensor) {
	rows, cols := t.Shape[0], t.Shape[1]
	vals := make([]float64, rows*cols)
	quant.DecodeFloat64(t.DType, t.Data, vals)
	sr, sc := (rows+br-1)/br, (cols+bc-1)/bc
	amax := make([]float64, sr*sc)
	for i, v := range vals {
		k := (uint64(i)/cols/br)*sc + uint64(i)%cols/bc
		amax[k] = max(amax[k], math.Abs(v))
	}
	data := make([]byte, len(vals))
	for i, v := range vals {
		s := float32(amax[(uint64(i)/cols/br)*sc+uint64(i)%cols/bc] / 448)
		data[i] = toE4M3(float64(float32(v) / s))
	}
	var sb []byte
	for _, a := range amax {
		sb = binary.LittleEndian.AppendUint32(sb, math.Float32bits(float32(a/448)*mult))
	}
	return fixture.Tensor{Name: t.Name, DType: safetensors.F8_E4M3, Shape: t.Shape, Data: data},
		fixture.Tensor{Name: t.Name + "_scale_inv", DType: safetensors.F32, Shape: []uint64{sr, sc}, Data: sb}
}

// TestQuantValuesBlockFP8: a block-FP8 export (quant_method "fp8", blocks
// 16×16 that do not divide the shape) judged by its steps: faithful passes,
// one weight's scales ×2 is a quantization_error.
func TestQuantValuesBlockFP8(t *testing.T) {
	norm := bf16Weights("model.norm.weight", 1, 72)
	src := []fixture.Tensor{norm, bf16Weights(qProj, 2, 40, 72), bf16Weights(kProj, 3, 24, 200)}
	cfg := map[string]any{"model_type": "llama", "quantization_config": map[string]any{"quant_method": "fp8", "weight_block_size": []int{16, 16}}}
	pub := filepath.Join(t.TempDir(), "published")
	if err := fixture.WriteSharded(pub, src, 1, nil); err != nil {
		t.Fatal(err)
	}
	quantized := func(mult float32) []fixture.Tensor {
		out := []fixture.Tensor{norm}
		for i, x := range src[1:] {
			m := float32(1)
			if i == 0 {
				m = mult
			}
			w, s := quantizeBlockFP8(x, 16, 16, m)
			out = append(out, w, s)
		}
		return out
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
				if (s.Key == qProj || s.Key == kProj) && (s.Quantization == nil || s.Quantization.Bound != "elementwise") {
					t.Errorf("%s: %+v", s.Key, s)
				}
			}
		})
	}
}
