package quant

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// ScaledFP8 is F8_E4M3 with one F32 scale for the whole tensor: value =
// fp8 · scale, multiplied in float32 as compressed-tensors' dequantize does
// (x_q.to(scale.dtype) * scale) for its float-quantized "tensor" strategy,
// and as FP8 checkpoints with a scalar weight_scale store it. It is the
// reference codec that proves the Codec interface and the quanttest suite.
type ScaledFP8 struct{}

var scaledFP8Parts = []Part{{Data, tensorfile.F8_E4M3}, {Scale, tensorfile.F32}}

func (ScaledFP8) String() string { return "F8_E4M3 per-tensor" }
func (ScaledFP8) Parts() []Part  { return scaledFP8Parts }
func (ScaledFP8) Tile() Tile     { return Tile{Rows: 1, Cols: 1} }

func (ScaledFP8) Sizes(d Dims, sizes []uint64) error {
	n, ok := d.Values()
	if !ok {
		return fmt.Errorf("%s: %d × %d values overflow", ScaledFP8{}, d.Rows, d.Cols)
	}
	if len(sizes) < 2 {
		return fmt.Errorf("%s: sizes for %d parts, want 2", ScaledFP8{}, len(sizes))
	}
	sizes[0], sizes[1] = n, 4
	return nil
}

func (c ScaledFP8) Spans(d Dims, r0, r1 uint64, dst []Span) ([]Span, error) {
	if err := c.check(d, r0, r1); err != nil {
		return dst, err
	}
	return append(dst,
		Span{Part: 0, Offset: r0 * d.Cols, Len: (r1 - r0) * d.Cols, Count: 1},
		Span{Part: 1, Len: 4, Count: 1}), nil
}

func (c ScaledFP8) Decode(d Dims, r0, r1 uint64, parts [][]byte, dst []float32) error {
	if err := c.check(d, r0, r1); err != nil {
		return err
	}
	if len(parts) != 2 {
		return fmt.Errorf("%s: %d parts, want 2", c, len(parts))
	}
	n := (r1 - r0) * d.Cols // no overflow: check bounded it by Rows·Cols
	if err := need(c, "data", n, 1, len(parts[0])); err != nil {
		return err
	}
	if err := need(c, "scale", 1, 4, len(parts[1])); err != nil {
		return err
	}
	if err := need(c, "output", n, 1, len(dst)); err != nil {
		return err
	}
	scale := math.Float32frombits(binary.LittleEndian.Uint32(parts[1]))
	t := f8Tables()[tensorfile.F8_E4M3]
	for i, b := range parts[0][:n] {
		dst[i] = t[b] * scale
	}
	return nil
}

func (c ScaledFP8) check(d Dims, r0, r1 uint64) error {
	if _, ok := d.Values(); !ok {
		return fmt.Errorf("%s: %d × %d values overflow", c, d.Rows, d.Cols)
	}
	if err := CheckRange(c.Tile(), d, r0, r1); err != nil {
		return fmt.Errorf("%s: %w", c, err)
	}
	return nil
}
