package quant

import (
	"fmt"

	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// BlockFP8 is block-scaled F8_E4M3 as DeepSeek-V3 ships it and transformers'
// finegrained_fp8 loads it (quant_method "fp8", weight_block_size [bRows,
// bCols]): weight F8_E4M3 [rows, cols] beside weight_scale_inv F32
// [⌈rows/bRows⌉, ⌈cols/bCols⌉], and value = fp8 · scale_inv of the element's
// block, multiplied in float32 (deepseek-ai/DeepSeek-V3 inference/kernel.py
// weight_dequant_kernel: y = x.to(float32) * s; huggingface/transformers
// src/transformers/integrations/finegrained_fp8.py at
// 3c48befbac8c4e11124f3bf1823d1407c6badc47). The last block row and column
// are partial when the blocks do not divide the shape, which is why the
// scale's shape takes the ceiling. The value is the float32 product, before
// the kernel's store to BF16.
type BlockFP8 struct{ rows, cols uint64 }

// NewBlockFP8 returns the codec of blocks of blockRows × blockCols.
func NewBlockFP8(blockRows, blockCols uint64) (*BlockFP8, error) {
	if blockRows == 0 || blockCols == 0 {
		return nil, fmt.Errorf("F8_E4M3 block %d×%d: empty blocks", blockRows, blockCols)
	}
	return &BlockFP8{blockRows, blockCols}, nil
}

var blockFP8Parts = []Part{{Data, tensorfile.F8_E4M3}, {Scale, tensorfile.F32}}

func (c *BlockFP8) String() string { return fmt.Sprintf("F8_E4M3 block %d×%d", c.rows, c.cols) }
func (c *BlockFP8) Parts() []Part  { return blockFP8Parts }
func (c *BlockFP8) Tile() Tile     { return Tile{Rows: c.rows, Cols: c.cols} }

// geometry is the scale's columns, after the overflow checks of Sizes.
func (c *BlockFP8) geometry(d Dims) (scaleCols uint64, sizes [2]uint64, err error) {
	n, ok := d.Values()
	scaleCols = ceilDiv(d.Cols, c.cols)
	s, ok2 := mul3(ceilDiv(d.Rows, c.rows), scaleCols, 4)
	if !ok || !ok2 {
		return 0, sizes, fmt.Errorf("%s: %d × %d values overflow", c, d.Rows, d.Cols)
	}
	return scaleCols, [2]uint64{n, s}, nil
}

func (c *BlockFP8) Sizes(d Dims, sizes []uint64) error {
	_, s, err := c.geometry(d)
	if err != nil {
		return err
	}
	if len(sizes) < 2 {
		return fmt.Errorf("%s: sizes for %d parts, want 2", c, len(sizes))
	}
	copy(sizes, s[:])
	return nil
}

func (c *BlockFP8) Spans(d Dims, r0, r1 uint64, dst []Span) ([]Span, error) {
	sc, _, err := c.geometry(d)
	if err != nil {
		return dst, err
	}
	if err := checkRows(c, d, r0, r1); err != nil {
		return dst, err
	}
	return append(dst, rowsSpan(0, r0, r1, d.Cols), rowsSpan(1, r0/c.rows, ceilDiv(r1, c.rows), sc*4)), nil
}

func (c *BlockFP8) Decode(d Dims, r0, r1 uint64, parts [][]byte, dst []float32) error {
	return c.decode(d, r0, r1, parts, dst, nil)
}

// DecodeSteps writes the values of rows [r0, r1) into dst and the step of
// each (see Steps) into steps, in one pass.
func (c *BlockFP8) DecodeSteps(d Dims, r0, r1 uint64, parts [][]byte, dst, steps []float32) error {
	return c.decode(d, r0, r1, parts, dst, steps)
}

// DecodeRange writes values [lo, hi) of rows [r0, r1), counted from row
// r0's first, into dst[:hi-lo] and their steps into steps[:hi-lo] unless
// steps is nil: what DecodeSteps writes there, a piece at a time.
func (c *BlockFP8) DecodeRange(d Dims, r0, r1 uint64, parts [][]byte, lo, hi uint64, dst, steps []float32) error {
	return c.decodeRange(d, r0, r1, parts, lo, hi, dst, steps)
}

// decode writes the values of rows [r0, r1) into dst and their steps into
// steps, each unless nil.
func (c *BlockFP8) decode(d Dims, r0, r1 uint64, parts [][]byte, dst, steps []float32) error {
	return c.decodeRange(d, r0, r1, parts, 0, (r1-r0)*d.Cols, dst, steps) // Spans checks the rows first
}

// decodeRange is decode of values [lo, hi) of the rows, into dst and steps
// from their first.
func (c *BlockFP8) decodeRange(d Dims, r0, r1 uint64, parts [][]byte, lo, hi uint64, dst, steps []float32) error {
	e4m3Steps := e4m3StepsTable()
	var buf [2]Span
	spans, err := c.Spans(d, r0, r1, buf[:0])
	if err != nil {
		return err
	}
	if err := checkValueRange(c, (r1-r0)*d.Cols, lo, hi, 1); err != nil {
		return err
	}
	if err := checkOutputs(c, spans, parts, dst, steps, hi-lo); err != nil {
		return err
	}
	if lo == hi {
		return nil
	}
	t := f8Tables()[tensorfile.F8_E4M3]
	sc := ceilDiv(d.Cols, c.cols)
	data, scales := parts[0], parts[1]
	b0 := r0 / c.rows
	for r := r0 + lo/d.Cols; r < r1 && (r-r0)*d.Cols < hi; r++ {
		base := (r - r0) * d.Cols
		c0, c1 := max(lo, base)-base, min(hi-base, d.Cols)
		srow := (r/c.rows - b0) * sc
		for j := c0 / c.cols; j*c.cols < c1; j++ {
			if whole := (c1 - j*c.cols) / c.cols; dst != nil && j*c.cols >= c0 && whole > 0 {
				// the row's whole blocks from j, in one vector call
				at := base + j*c.cols - lo
				var st []float32
				if steps != nil {
					st = steps[at:]
				}
				if n := uint64(e4m3Blocks(dst[at:], st, data[base+j*c.cols:], scales[4*(srow+j):4*(srow+j+whole)], int(c.cols))); n > 0 {
					j += n - 1
					continue
				}
			}
			s := floatAt(tensorfile.F32, scales, srow+j)
			from, to := max(j*c.cols, c0), min((j+1)*c.cols, c1)
			codes := data[base+from : base+to]
			at := base + from - lo
			switch {
			case steps == nil:
				o := dst[at:][:len(codes)]
				k := e4m3Scaled(o, nil, codes, s)
				for i, b := range codes[k:] {
					o[k+i] = t[b] * s
				}
			case dst == nil:
				st, as := steps[at:][:len(codes)], absf(s)
				for i, b := range codes {
					st[i] = e4m3Steps[b] * as
				}
			default:
				o, st, as := dst[at:][:len(codes)], steps[at:][:len(codes)], absf(s)
				k := e4m3Scaled(o, st, codes, s)
				o, st, codes = o[k:], st[k:], codes[k:]
				for i, b := range codes {
					o[i] = t[b] * s
					st[i] = e4m3Steps[b] * as
				}
			}
		}
	}
	return nil
}
