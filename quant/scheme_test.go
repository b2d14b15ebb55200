package quant

import (
	"errors"
	"slices"
	"testing"

	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// TestSchemesBind: each registered scheme binds a weight's companions to
// it, leaves plain tensors alone, and lists a companion without its weight
// as Unused; the unsupported codec says which scheme it is and decodes
// nothing.
func TestSchemesBind(t *testing.T) {
	ti := func(name string, d tensorfile.DType, shape ...uint64) tensorfile.TensorInfo {
		return tensorfile.TensorInfo{Name: name, DType: d, Shape: shape}
	}
	norm := ti("model.norm.weight", tensorfile.BF16, 8)
	tests := []struct {
		scheme  string
		tensors []tensorfile.TensorInfo
		weight  string
		parts   int // parts present, data included
		shape   []uint64
		unused  []string
	}{
		{"fp8", []tensorfile.TensorInfo{norm, ti("a.weight", tensorfile.F8_E4M3, 256, 130), ti("a.weight_scale_inv", tensorfile.F32, 2, 2),
			ti("b.weight_scale_inv", tensorfile.F32, 1, 1)}, "a.weight", 2, []uint64{256, 130}, []string{"b.weight_scale_inv"}},
		{"mxfp4", []tensorfile.TensorInfo{norm, ti("e.gate_up_proj_blocks", tensorfile.U8, 4, 64, 2, 16), ti("e.gate_up_proj_scales", tensorfile.U8, 4, 64, 2),
			ti("e.gate_up_proj_bias", tensorfile.BF16, 4, 64), ti("lone_scales", tensorfile.U8, 3)}, "e.gate_up_proj", 2, []uint64{4, 64, 64}, []string{"lone_scales"}},
		{"gptq", []tensorfile.TensorInfo{norm, ti("l.qweight", tensorfile.I32, 8, 8), ti("l.qzeros", tensorfile.I32, 2, 1), ti("l.scales", tensorfile.F16, 2, 8),
			ti("l.g_idx", tensorfile.I32, 64), ti("l.bias", tensorfile.F16, 8)}, "l.weight", 4, nil, nil},
		{"mlx", []tensorfile.TensorInfo{norm, ti("l.weight", tensorfile.U32, 8, 8), ti("l.scales", tensorfile.BF16, 8, 1), ti("l.biases", tensorfile.BF16, 8, 1)}, "l.weight", 3, nil, nil},
		{"bitsandbytes", []tensorfile.TensorInfo{norm, ti("l.weight", tensorfile.U8, 256, 1), ti("l.weight.absmax", tensorfile.F32, 8),
			ti("l.weight.quant_state.bitsandbytes__fp4", tensorfile.U8, 90)}, "l.weight", 3, nil, nil},
	}
	for _, tt := range tests {
		s, ok := LookupScheme(tt.scheme)
		if !ok {
			t.Fatalf("%s: not registered", tt.scheme)
		}
		b, err := s.Bind(nil, tt.tensors)
		if err != nil || len(b.Bindings) != 1 {
			t.Fatalf("%s: %+v, %v", tt.scheme, b, err)
		}
		bind := b.Bindings[0]
		present := slices.DeleteFunc(slices.Clone(bind.Parts), func(p string) bool { return p == "" })
		if bind.Weight != tt.weight || len(present) != tt.parts || !slices.Equal(bind.Shape, tt.shape) || !slices.Equal(b.Unused, tt.unused) {
			t.Errorf("%s: %+v, unused %v", tt.scheme, bind, b.Unused)
		}
		if len(bind.Codec.Parts()) != len(bind.Parts) || bind.Codec.Parts()[0].Role != Data {
			t.Errorf("%s: parts %v for %v", tt.scheme, bind.Codec.Parts(), bind.Parts)
		}
		if err := bind.Codec.Decode(Dims{1, 1}, 0, 1, nil, nil); !errors.Is(err, ErrUnsupported) {
			t.Errorf("%s: decode: %v", tt.scheme, err)
		}
	}
	if got := len(Schemes()); got < 7 {
		t.Errorf("%d schemes registered", got)
	}
}
