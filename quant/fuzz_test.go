package quant_test

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ckptcheck/ckptcheck/quant"
	"github.com/ckptcheck/ckptcheck/quant/quanttest"
	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// TestCarriedParts runs the suite on a codec that carries a part it does
// not decode (fp8's input_scale): the carried part is sized, spanned whole,
// and a short one is an error.
func TestCarriedParts(t *testing.T) {
	s, _ := quant.LookupScheme("fp8")
	b, err := s.Bind([]byte(`{"weight_block_size":[4,4]}`), []tensorfile.TensorInfo{
		{Name: "a.weight", DType: tensorfile.F8_E4M3, Shape: []uint64{10, 7}},
		{Name: "a.weight_scale_inv", DType: tensorfile.F32, Shape: []uint64{3, 2}},
		{Name: "a.input_scale", DType: tensorfile.F32, Shape: []uint64{1}}})
	if err != nil || len(b.Bindings) != 1 || len(b.Bindings[0].Codec.Parts()) != 3 {
		t.Fatalf("%+v, %v", b, err)
	}
	v := blockFP8Vector(rand.New(rand.NewPCG(1, 1)), 10, 7, 4, 4)
	v.Parts = append(v.Parts, f32(0.5))
	quanttest.TestCodec(t, b.Bindings[0].Codec, []quanttest.Vector{v})
}

// FuzzBNBQuantState: any bytes parse or fail, never panic, and what parses
// makes a codec and dims without overflow.
func FuzzBNBQuantState(f *testing.F) {
	f.Add([]byte(`{"quant_type": "nf4", "blocksize": 64, "dtype": "bfloat16", "shape": [4096, 4096], "nested_blocksize": 256, "nested_dtype": "float32", "nested_offset": 0.0354}`))
	f.Add([]byte(`{"quant_type": "fp4", "blocksize": 128, "dtype": "float16", "shape": [3, 11]}`))
	f.Add([]byte(`{"quant_type": "nf4", "blocksize": 18446744073709551615, "dtype": "float32", "shape": [18446744073709551615, 2]}`))
	f.Add([]byte(`{"shape": [1,2,3,4,5,6,7,8,9]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		q, err := quant.ParseBNBQuantState(b)
		if err != nil {
			return
		}
		c, err := quant.NewBNB4(q.Config)
		if err != nil {
			t.Fatalf("parsed %+v, which NewBNB4 refuses: %v", q, err)
		}
		if d, err := q.Dims(); err == nil {
			sizes := make([]uint64, len(c.Parts()))
			_ = c.Sizes(d, sizes)
			_, _ = c.Spans(d, 0, min(d.Rows, 1), nil)
		}
	})
}

// FuzzSchemeShapes binds fuzzed headers (names from every scheme's layouts,
// dtypes and shapes from the input) under every scheme with a few configs:
// no panic, no allocation by the shapes' numbers (the fuzzer's memory limit
// tells), and every decoding codec's Sizes and Spans of its binding's shape
// are an error or well-formed.
func FuzzSchemeShapes(f *testing.F) {
	f.Add(uint8(0), []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
	f.Add(uint8(3), make([]byte, 64))
	f.Add(uint8(7), []byte{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF})
	names := []string{"w.weight", "w.weight_scale_inv", "w.input_scale", "w_blocks", "w_scales", "w.qweight", "w.qzeros", "w.scales", "w.g_idx",
		"w.biases", "w.weight.absmax", "w.weight.quant_map", "w.weight.nested_absmax", "w.weight.nested_quant_map",
		"w.weight.quant_state.bitsandbytes__nf4", "w.SCB", "w.weight_packed", "w.weight_scale", "w.weight_zero_point", "w.weight_global_scale",
		"w.weight_shape", "w.weight_g_idx"}
	configs := []string{"", `{"weight_block_size":[128,128]}`, `{"bits":4,"group_size":128}`, `{"bits":8,"group_size":-1,"checkpoint_format":"gptq_v2"}`,
		`{"group_size":64,"bits":2}`, `{"format":"pack-quantized","config_groups":{"g":{"targets":["Linear"],"weights":{"num_bits":4,"type":"int","symmetric":false,"strategy":"group","group_size":128}}}}`,
		`{"format":"float-quantized","config_groups":{"g":{"targets":["Linear"],"weights":{"num_bits":8,"type":"float","strategy":"block","block_structure":[128,128]}}}}`,
		`{"format":"nvfp4-pack-quantized","config_groups":{"g":{"targets":["re:w"],"weights":{"num_bits":4,"type":"float"}}}}`}
	dtypes := tensorfile.DTypes()
	f.Fuzz(func(t *testing.T, which uint8, b []byte) {
		var tensors []tensorfile.TensorInfo
		for len(b) >= 4 && len(tensors) < 12 {
			ti := tensorfile.TensorInfo{Name: names[int(b[0])%len(names)], DType: dtypes[int(b[1])%len(dtypes)]}
			dims := int(b[2]) % 5
			b = b[3:]
			for range dims {
				if len(b) < 2 {
					break
				}
				v := uint64(binary.LittleEndian.Uint16(b))
				if v >= 0xFFF0 {
					v = math.MaxUint64 - (0xFFFF - v) // hostile dimensions
				} else if v > 0x8000 {
					v <<= 30
				}
				ti.Shape, b = append(ti.Shape, v), b[2:]
			}
			tensors = append(tensors, ti)
		}
		config := []byte(configs[int(which)%len(configs)])
		for _, s := range quant.Schemes() {
			bound, err := s.Bind(config, tensors)
			if err != nil {
				continue
			}
			for _, bind := range bound.Bindings {
				c := bind.Codec
				if len(c.Parts()) != len(bind.Parts) {
					t.Fatalf("%s: %d parts, %d names", s.Name(), len(c.Parts()), len(bind.Parts))
				}
				if len(bind.Shape) == 0 {
					continue
				}
				d := quant.Dims{Rows: 1, Cols: bind.Shape[len(bind.Shape)-1]}
				if len(bind.Shape) >= 2 {
					d.Rows = bind.Shape[len(bind.Shape)-2]
				}
				sizes := make([]uint64, len(c.Parts()))
				if c.Sizes(d, sizes) != nil || d.Rows == 0 {
					continue
				}
				spans, err := c.Spans(d, 0, min(d.Rows, c.Tile().Rows), nil)
				for _, sp := range spans {
					if end, ok := sp.End(); err == nil && (!ok || end > sizes[sp.Part]) {
						t.Fatalf("%s %s: span %+v past part %d's %d bytes", s.Name(), c, sp, sp.Part, sizes[sp.Part])
					}
				}
			}
		}
	})
}
