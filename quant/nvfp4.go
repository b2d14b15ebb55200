package quant

import (
	"fmt"

	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// NVFP4 is E2M1 in blocks of 16 with an F8_E4M3 scale a block and one F32
// global scale: weight U8 [rows, cols/2] (two values a byte, the low nibble
// first), weight_scale F8_E4M3 [rows, cols/16], and the global scale [1].
// Two exporters store it, and they disagree on what the global scale means:
//
//   - NVIDIA ModelOpt (weight_scale_2, which multiplies): value = e2m1 ·
//     (float32(scale) · scale_2), the block scale rounded to float32 first
//     (NVIDIA/Model-Optimizer modelopt/torch/quantization/qtensor/
//     nvfp4_tensor.py NVFP4QTensor.dequantize at
//     211c6b3413c52b2fd7a671eda3ce8b2139a4fedd; the result is the float32
//     product, before its cast to the caller's dtype);
//   - compressed-tensors nvfp4-pack-quantized (weight_global_scale, which
//     divides): value = bf16(e2m1 · (float32(scale) / global)), the quotient
//     in float32 and the result stored in BF16, unpack_fp4_from_uint8's
//     default dtype (vllm-project/compressed-tensors src/compressed_tensors/
//     compressors/quantized_compressors/fp4_quantized.py at
//     0c9d5c7eb6d30af4c0ff45783fc6e47f594ff993 and forward.py _dequantize).
type NVFP4 struct{ divide bool }

// NVFP4ModelOpt is ModelOpt's NVFP4, NVFP4CompressedTensors
// compressed-tensors'.
var (
	NVFP4ModelOpt          = &NVFP4{divide: false}
	NVFP4CompressedTensors = &NVFP4{divide: true}
)

var nvfp4Parts = []Part{{Data, tensorfile.U8}, {Scale, tensorfile.F8_E4M3}, {GlobalScale, tensorfile.F32}}

func (c *NVFP4) String() string {
	if c.divide {
		return "NVFP4 (E2M1, F8_E4M3 scale per 16, global scale divides)"
	}
	return "NVFP4 (E2M1, F8_E4M3 scale per 16, scale_2 multiplies)"
}
func (c *NVFP4) Parts() []Part { return nvfp4Parts }
func (c *NVFP4) Tile() Tile    { return Tile{Rows: 1, Cols: 16} }

func (c *NVFP4) Sizes(d Dims, sizes []uint64) error {
	if d.Cols%16 != 0 {
		return fmt.Errorf("%s: %d values a row are not whole blocks of 16", c, d.Cols)
	}
	n, ok := d.Values()
	if !ok {
		return fmt.Errorf("%s: %d × %d values overflow", c, d.Rows, d.Cols)
	}
	if len(sizes) < 3 {
		return fmt.Errorf("%s: sizes for %d parts, want 3", c, len(sizes))
	}
	sizes[0], sizes[1], sizes[2] = n/2, n/16, 4
	return nil
}

func (c *NVFP4) Spans(d Dims, r0, r1 uint64, dst []Span) ([]Span, error) {
	var sizes [3]uint64
	if err := c.Sizes(d, sizes[:]); err != nil {
		return dst, err
	}
	if err := checkRows(c, d, r0, r1); err != nil {
		return dst, err
	}
	return append(dst, rowsSpan(0, r0, r1, d.Cols/2), rowsSpan(1, r0, r1, d.Cols/16), whole(2, 4)), nil
}

func (c *NVFP4) Decode(d Dims, r0, r1 uint64, parts [][]byte, dst []float32) error {
	var buf [3]Span
	spans, err := c.Spans(d, r0, r1, buf[:0])
	if err != nil {
		return err
	}
	n := (r1 - r0) * d.Cols
	if err := checkParts(c, spans, parts, dst, n); err != nil {
		return err
	}
	g := floatAt(tensorfile.F32, parts[2], 0)
	t := f8Tables()[tensorfile.F8_E4M3]
	data, scales := parts[0][:n/2], parts[1][:n/16]
	for k, sb := range scales {
		out := dst[16*k : 16*k+16 : 16*k+16]
		in := data[8*k : 8*k+8 : 8*k+8]
		if c.divide {
			s := t[sb] / g
			for i, b := range in {
				out[2*i] = roundBF16(e2m1Values[b&0xF] * s)
				out[2*i+1] = roundBF16(e2m1Values[b>>4] * s)
			}
			continue
		}
		s := t[sb] * g
		for i, b := range in {
			out[2*i] = e2m1Values[b&0xF] * s
			out[2*i+1] = e2m1Values[b>>4] * s
		}
	}
	return nil
}
