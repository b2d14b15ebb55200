package quant

import (
	"encoding/binary"
	"errors"
	"slices"
	"testing"

	"github.com/ckptcheck/ckptcheck/tensorfile"
)

func ti(name string, d tensorfile.DType, shape ...uint64) tensorfile.TensorInfo {
	return tensorfile.TensorInfo{Name: name, DType: d, Shape: shape}
}

// TestSchemesBind: each registered scheme binds a weight's companions to
// it, leaves plain tensors alone, lists a companion without its weight as
// Unused, and gives the codec and logical shape its headers and config
// determine; combinations no codec decodes stay Unsupported.
func TestSchemesBind(t *testing.T) {
	norm := ti("model.norm.weight", tensorfile.BF16, 8)
	ctPack := `{"quant_method":"compressed-tensors","format":"pack-quantized","config_groups":{"group_0":{"targets":["Linear"],
		"weights":{"num_bits":4,"type":"int","symmetric":false,"strategy":"group","group_size":32}}}}`
	tests := []struct {
		name, scheme, config string
		tensors              []tensorfile.TensorInfo
		weight               string
		parts                int // parts present, data included
		shape                []uint64
		unused               []string
		codec                string // the codec's String; "" for Unsupported
	}{
		{"fp8 block", "fp8", "", []tensorfile.TensorInfo{norm, ti("a.weight", tensorfile.F8_E4M3, 256, 130), ti("a.weight_scale_inv", tensorfile.F32, 2, 2),
			ti("b.weight_scale_inv", tensorfile.F32, 1, 1)}, "a.weight", 2, []uint64{256, 130}, []string{"b.weight_scale_inv"}, "F8_E4M3 block 128×128"},
		{"fp8 block from config", "fp8", `{"quant_method":"fp8","weight_block_size":[64,32]}`, []tensorfile.TensorInfo{ti("a.weight", tensorfile.F8_E4M3, 64, 64),
			ti("a.weight_scale_inv", tensorfile.F32, 1, 2), ti("a.input_scale", tensorfile.F32, 1)}, "a.weight", 3, []uint64{64, 64}, nil, "F8_E4M3 block 64×32"},
		{"fp8 scale of another dtype", "fp8", "", []tensorfile.TensorInfo{ti("a.weight", tensorfile.F8_E4M3, 128, 128), ti("a.weight_scale_inv", tensorfile.BF16, 1, 1)},
			"a.weight", 2, []uint64{128, 128}, nil, ""},
		{"mxfp4", "mxfp4", "", []tensorfile.TensorInfo{norm, ti("e.gate_up_proj_blocks", tensorfile.U8, 4, 64, 2, 16), ti("e.gate_up_proj_scales", tensorfile.U8, 4, 64, 2),
			ti("e.gate_up_proj_bias", tensorfile.BF16, 4, 64), ti("lone_scales", tensorfile.U8, 3)}, "e.gate_up_proj", 2, []uint64{4, 64, 64}, []string{"lone_scales"},
			"MXFP4 (E2M1, E8M0 scale per 32)"},
		{"gptq inferred", "gptq", "", []tensorfile.TensorInfo{norm, ti("l.qweight", tensorfile.I32, 8, 8), ti("l.qzeros", tensorfile.I32, 2, 1), ti("l.scales", tensorfile.F16, 2, 8),
			ti("l.g_idx", tensorfile.I32, 64), ti("l.bias", tensorfile.F16, 8)}, "l.weight", 4, []uint64{8, 64}, nil, "GPTQ int4 g32"},
		{"gptq config", "gptq", `{"quant_method":"gptq","bits":8,"group_size":-1,"checkpoint_format":"gptq_v2"}`, []tensorfile.TensorInfo{ti("l.qweight", tensorfile.I32, 16, 8),
			ti("l.qzeros", tensorfile.I32, 1, 2), ti("l.scales", tensorfile.F16, 1, 8)}, "l.weight", 3, []uint64{8, 64}, nil, "GPTQ int8 per-channel"},
		{"gptq 3-bit", "gptq", `{"bits":3,"group_size":128}`, []tensorfile.TensorInfo{ti("l.qweight", tensorfile.I32, 12, 8), ti("l.scales", tensorfile.F16, 1, 8)},
			"l.weight", 2, nil, nil, ""},
		{"awq", "awq", `{"quant_method":"awq","bits":4,"group_size":32,"version":"GEMM","zero_point":true}`, []tensorfile.TensorInfo{ti("l.qweight", tensorfile.I32, 64, 2),
			ti("l.qzeros", tensorfile.I32, 2, 2), ti("l.scales", tensorfile.F16, 2, 16)}, "l.weight", 3, []uint64{16, 64}, nil, "AWQ int4 g32"},
		{"modelopt nvfp4", "modelopt", `{"quant_method":"modelopt","quant_algo":"NVFP4"}`, []tensorfile.TensorInfo{norm, ti("l.weight", tensorfile.U8, 8, 16),
			ti("l.weight_scale", tensorfile.F8_E4M3, 8, 2), ti("l.weight_scale_2", tensorfile.F32), ti("l.input_scale", tensorfile.F32)}, "l.weight", 4, []uint64{8, 32}, nil,
			"NVFP4 (E2M1, F8_E4M3 scale per 16, scale_2 multiplies)"},
		{"modelopt fp8", "modelopt", `{"quantization":{"quant_algo":"FP8"}}`, []tensorfile.TensorInfo{norm, ti("l.weight", tensorfile.F8_E4M3, 8, 16),
			ti("l.weight_scale", tensorfile.F32), ti("l.input_scale", tensorfile.F32)}, "l.weight", 3, []uint64{8, 16}, nil, "F8_E4M3 per-tensor (F32 scale)"},
		{"awq gemv", "awq", `{"quant_method":"awq","bits":4,"group_size":32,"version":"gemv"}`, []tensorfile.TensorInfo{ti("l.qweight", tensorfile.I32, 16, 8),
			ti("l.scales", tensorfile.F16, 16, 2)}, "l.weight", 2, nil, nil, ""},
		{"mlx default", "mlx", "", []tensorfile.TensorInfo{norm, ti("l.weight", tensorfile.U32, 8, 8), ti("l.scales", tensorfile.BF16, 8, 1), ti("l.biases", tensorfile.BF16, 8, 1)},
			"l.weight", 3, []uint64{8, 64}, nil, "MLX affine int4 g64"},
		{"mlx per module", "mlx", `{"group_size":64,"bits":4,"m.l":{"group_size":32,"bits":8},"m.x":false}`, []tensorfile.TensorInfo{
			ti("m.l.weight", tensorfile.U32, 8, 8), ti("m.l.scales", tensorfile.F16, 8, 1), ti("m.l.biases", tensorfile.F16, 8, 1)}, "m.l.weight", 3, []uint64{8, 32}, nil, "MLX affine int8 g32"},
		{"mlx 3-bit", "mlx", `{"group_size":64,"bits":3}`, []tensorfile.TensorInfo{ti("l.weight", tensorfile.U32, 8, 6), ti("l.scales", tensorfile.BF16, 8, 1),
			ti("l.biases", tensorfile.BF16, 8, 1)}, "l.weight", 3, nil, nil, ""},
		{"bitsandbytes 4-bit", "bitsandbytes", "", []tensorfile.TensorInfo{norm, ti("l.weight", tensorfile.U8, 256, 1), ti("l.weight.absmax", tensorfile.F32, 8),
			ti("l.weight.quant_state.bitsandbytes__fp4", tensorfile.U8, 90)}, "l.weight", 3, nil, nil, "bitsandbytes 4-bit (quant_state not read)"},
		{"bitsandbytes int8", "bitsandbytes", "", []tensorfile.TensorInfo{ti("l.weight", tensorfile.I8, 4, 8), ti("l.SCB", tensorfile.F32, 4), ti("l.weight_format", tensorfile.U8)},
			"l.weight", 3, []uint64{4, 8}, nil, "int8 row-wise (LLM.int8)"},
		{"compressed pack-quantized", "compressed-tensors", ctPack, []tensorfile.TensorInfo{ti("m.weight_packed", tensorfile.I32, 16, 8),
			ti("m.weight_scale", tensorfile.BF16, 16, 2), ti("m.weight_zero_point", tensorfile.I32, 2, 2), ti("m.weight_shape", tensorfile.I64, 2)},
			"m.weight", 4, nil, nil, "pack-quantized int4 g32 asym"},
		{"compressed nvfp4", "compressed-tensors", `{"format":"nvfp4-pack-quantized","config_groups":{"g":{"targets":["re:.*proj$"],"weights":{"num_bits":4,"type":"float","strategy":"tensor_group","group_size":16}}}}`,
			[]tensorfile.TensorInfo{ti("m.proj.weight_packed", tensorfile.U8, 4, 16), ti("m.proj.weight_scale", tensorfile.F8_E4M3, 4, 2),
				ti("m.proj.weight_global_scale", tensorfile.F32, 1), ti("m.proj.input_global_scale", tensorfile.F32, 1)}, "m.proj.weight", 4, []uint64{4, 32}, nil,
			"NVFP4 (E2M1, F8_E4M3 scale per 16, global scale divides)"},
		{"compressed fp8 channel, no config", "compressed-tensors", "", []tensorfile.TensorInfo{ti("m.weight", tensorfile.F8_E4M3, 4, 16),
			ti("m.weight_scale", tensorfile.BF16, 4, 1), ti("m.input_scale", tensorfile.F32, 1)}, "m.weight", 3, []uint64{4, 16}, nil, "F8_E4M3 per-channel (BF16 scale)"},
		{"compressed int8 naive", "compressed-tensors", `{"format":"naive-quantized","config_groups":{"g":{"targets":["Linear"],"weights":{"num_bits":8,"type":"int","strategy":"channel"}}}}`,
			[]tensorfile.TensorInfo{ti("m.weight", tensorfile.I8, 4, 16), ti("m.weight_scale", tensorfile.BF16, 4, 1)}, "m.weight", 2, []uint64{4, 16}, nil, ""},
	}
	for _, tt := range tests {
		s, ok := LookupScheme(tt.scheme)
		if !ok {
			t.Fatalf("%s: not registered", tt.scheme)
		}
		var config []byte
		if tt.config != "" {
			config = []byte(tt.config)
		}
		b, err := s.Bind(config, tt.tensors)
		if err != nil || len(b.Bindings) != 1 {
			t.Fatalf("%s: %+v, %v", tt.name, b, err)
		}
		bind := b.Bindings[0]
		present := slices.DeleteFunc(slices.Clone(bind.Parts), func(p string) bool { return p == "" })
		if bind.Weight != tt.weight || len(present) != tt.parts || !slices.Equal(bind.Shape, tt.shape) || !slices.Equal(b.Unused, tt.unused) {
			t.Errorf("%s: %+v, unused %v", tt.name, bind, b.Unused)
		}
		if len(bind.Codec.Parts()) != len(bind.Parts) || bind.Codec.Parts()[0].Role != Data {
			t.Errorf("%s: parts %v for %v", tt.name, bind.Codec.Parts(), bind.Parts)
		}
		_, unsupported := bind.Codec.(*Unsupported)
		if unsupported != (tt.codec == "") || (tt.codec != "" && bind.Codec.String() != tt.codec) {
			t.Errorf("%s: codec %q, want %q", tt.name, bind.Codec, tt.codec)
		}
		if unsupported {
			if err := bind.Codec.Decode(Dims{1, 1}, 0, 1, nil, nil); !errors.Is(err, ErrUnsupported) {
				t.Errorf("%s: decode: %v", tt.name, err)
			}
		}
		for i, p := range bind.Parts {
			if p == "" {
				continue
			}
			j := slices.IndexFunc(tt.tensors, func(t tensorfile.TensorInfo) bool { return t.Name == p })
			if d := bind.Codec.Parts()[i].DType; !unsupported && tt.tensors[j].DType != d {
				t.Errorf("%s: part %d is %s, the tensor %s", tt.name, i, d, tt.tensors[j].DType)
			}
		}
	}
	if got := len(Schemes()); got < 7 {
		t.Errorf("%d schemes registered", got)
	}
}

// TestSchemesIntern: one encoding bound twice is one codec, so that equal
// bytes of equal codecs mean equal values.
func TestSchemesIntern(t *testing.T) {
	s, _ := LookupScheme("fp8")
	tensors := []tensorfile.TensorInfo{ti("a.weight", tensorfile.F8_E4M3, 128, 128), ti("a.weight_scale_inv", tensorfile.F32, 1, 1), ti("a.input_scale", tensorfile.F32, 1)}
	b1, _ := s.Bind(nil, tensors)
	b2, _ := s.Bind(nil, tensors)
	if b1.Bindings[0].Codec != b2.Bindings[0].Codec {
		t.Error("two bindings of one encoding have different codecs")
	}
}

// TestResolvers: bitsandbytes' codec reads its quant state, compressed-
// tensors' pack-quantized its weight_shape.
func TestResolvers(t *testing.T) {
	bnb, _ := LookupScheme("bitsandbytes")
	state := `{"quant_type": "nf4", "blocksize": 64, "dtype": "bfloat16", "shape": [16, 8], "nested_blocksize": 256, "nested_dtype": "float32", "nested_offset": 0.0312}`
	b, err := bnb.Bind(nil, []tensorfile.TensorInfo{ti("l.weight", tensorfile.U8, 64, 1), ti("l.weight.absmax", tensorfile.U8, 2),
		ti("l.weight.quant_map", tensorfile.F32, 16), ti("l.weight.nested_absmax", tensorfile.F32, 1), ti("l.weight.nested_quant_map", tensorfile.F32, 256),
		ti("l.weight.quant_state.bitsandbytes__nf4", tensorfile.U8, uint64(len(state)))})
	if err != nil {
		t.Fatal(err)
	}
	bind := b.Bindings[0]
	r, ok := bind.Codec.(Resolver)
	if !ok || bind.Parts[r.MetaPart()] != "l.weight.quant_state.bitsandbytes__nf4" {
		t.Fatalf("%s (%v) is not a resolver of its quant state", bind.Codec, bind.Parts)
	}
	c, shape, err := r.Resolve([]byte(state))
	if err != nil || !slices.Equal(shape, []uint64{16, 8}) || !slices.Equal(c.Parts(), r.Parts()) || c.String() != "bitsandbytes NF4 block 64 (double quant)" {
		t.Fatalf("Resolve = %v, %v, %v", c, shape, err)
	}
	sizes := make([]uint64, len(c.Parts()))
	if err := c.Sizes(Dims{16, 8}, sizes); err != nil || !slices.Equal(sizes, []uint64{64, 2, 4, 1024, 64, uint64(len(state))}) {
		t.Errorf("Sizes = %v, %v", sizes, err)
	}
	for _, bad := range []string{`{"quant_type": "fp4", "blocksize": 64, "dtype": "bfloat16", "shape": [16, 8]}`, `[]`, `{"quant_type":"nf4"`} {
		if _, _, err := r.Resolve([]byte(bad)); err == nil {
			t.Errorf("Resolve(%s): no error", bad)
		}
	}

	ct, _ := LookupScheme("compressed-tensors")
	b, err = ct.Bind([]byte(`{"format":"pack-quantized","config_groups":{"g":{"targets":["Linear"],"weights":{"num_bits":4,"type":"int","strategy":"channel"}}}}`),
		[]tensorfile.TensorInfo{ti("m.weight_packed", tensorfile.I32, 4, 2), ti("m.weight_scale", tensorfile.F16, 4, 1), ti("m.weight_shape", tensorfile.I64, 2)})
	if err != nil {
		t.Fatal(err)
	}
	r, ok = b.Bindings[0].Codec.(Resolver)
	if !ok {
		t.Fatalf("%s is not a resolver", b.Bindings[0].Codec)
	}
	meta := binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, 4), 13)
	if c, shape, err := r.Resolve(meta); err != nil || !slices.Equal(shape, []uint64{4, 13}) || !slices.Equal(c.Parts(), r.Parts()) || c.String() != r.String() {
		t.Errorf("Resolve = %v, %v, %v", c, shape, err)
	} else if _, ok := c.(stepper); !ok {
		t.Errorf("resolved %s states no steps", c)
	}
	if _, _, err := r.Resolve(meta[:7]); err == nil {
		t.Error("a short weight_shape: no error")
	}
}
