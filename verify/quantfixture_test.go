package verify

import (
	"encoding/binary"
	"math"
	"strings"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/quant"
	"github.com/ckptcheck/ckptcheck/safetensors"
	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// The test side's quantizer and scheme: FP8 E4M3 with one F32 scale a
// tensor, as compressed-tensors' float-quantized "tensor" strategy writes
// it (vllm-project/compressed-tensors src/compressed_tensors/quantization/
// lifecycle/forward.py quantize: x_q = round(clamp(x / scale, -448, 448))
// cast to float8_e4m3fn, scale = max|x| / 448; dequantize x_q · scale).
// Until the quant package's schemes bind ScaledFP8 themselves, the tests
// register this scheme under its own quant_method.

const testFP8Method = "test-fp8-per-tensor"

type testFP8Scheme struct{}

func init() { quant.RegisterScheme(testFP8Scheme{}) }

func (testFP8Scheme) Name() string { return testFP8Method }

func (testFP8Scheme) Bind(_ []byte, tensors []tensorfile.TensorInfo) (quant.Bound, error) {
	byName := map[string]int{}
	for i, t := range tensors {
		byName[t.Name] = i
	}
	var b quant.Bound
	claimed := map[string]bool{}
	for _, t := range tensors {
		if !strings.HasSuffix(t.Name, ".weight") || t.DType != tensorfile.F8_E4M3 {
			continue
		}
		scale := t.Name + "_scale"
		if _, ok := byName[scale]; !ok {
			scale = ""
		}
		claimed[scale] = true
		b.Bindings = append(b.Bindings, quant.Binding{Weight: t.Name, Shape: t.Shape, Codec: quant.ScaledFP8{}, Parts: []string{t.Name, scale}})
	}
	for _, t := range tensors {
		if strings.HasSuffix(t.Name, ".weight_scale") && !claimed[t.Name] {
			b.Unused = append(b.Unused, t.Name)
		}
	}
	return b, nil
}

// e4m3Values are the finite F8_E4M3 values by code (NaN codes hold NaN).
var e4m3Values = func() [256]float64 {
	var v [256]float64
	var codes [256]byte
	for i := range codes {
		codes[i] = byte(i)
	}
	quant.DecodeFloat64(safetensors.F8_E4M3, codes[:], v[:])
	return v
}()

// toE4M3 rounds x to the nearest E4M3 value, ties to an even code,
// saturating at ±448 (torch's cast after compressed-tensors' clamp).
func toE4M3(x float64) byte {
	x = max(-448, min(448, x))
	best, bestD := byte(0), math.Inf(1)
	for c := range 256 {
		v := e4m3Values[c]
		if math.IsNaN(v) {
			continue
		}
		d := math.Abs(v - x)
		if d < bestD || (d == bestD && c&1 == 0 && best&1 == 1) {
			best, bestD = byte(c), d
		}
	}
	return best
}

// quantizeFP8 quantizes a BF16 tensor per tensor with a scale of mult
// times the faithful one (mult 1 is faithful): the weight and its scale.
func quantizeFP8(t fixture.Tensor, mult float32) (w, scale fixture.Tensor) {
	vals := make([]float64, len(t.Data)/2)
	quant.DecodeFloat64(t.DType, t.Data, vals)
	amax := 0.0
	for _, v := range vals {
		amax = max(amax, math.Abs(v))
	}
	s := float32(amax / 448)
	data := make([]byte, len(vals))
	for i, v := range vals {
		data[i] = toE4M3(float64(float32(v) / s))
	}
	sb := binary.LittleEndian.AppendUint32(nil, math.Float32bits(s*mult))
	return fixture.Tensor{Name: t.Name, DType: safetensors.F8_E4M3, Shape: t.Shape, Data: data},
		fixture.Tensor{Name: t.Name + "_scale", DType: safetensors.F32, Shape: []uint64{1}, Data: sb}
}

// bf16Weights is a BF16 tensor of pseudo-random values around ±0.05, as a
// trained linear's: deterministic from seed.
func bf16Weights(name string, seed uint64, shape ...uint64) fixture.Tensor {
	n := uint64(1)
	for _, d := range shape {
		n *= d
	}
	vals := make([]float32, n)
	x := seed*0x9E3779B97F4A7C15 + 1
	for i := range vals {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		vals[i] = (float32(x>>40)/float32(1<<24) - 0.5) * 0.1
	}
	return fixture.Tensor{Name: name, DType: safetensors.BF16, Shape: shape, Data: fixture.Encode(vals, safetensors.BF16)}
}
