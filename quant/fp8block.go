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
	t, e4m3Steps := f8Tables()[tensorfile.F8_E4M3], e4m3StepsTable()
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
			var o, st []float32
			if dst != nil {
				o = dst[at:][:len(codes)]
			}
			if steps != nil {
				st = steps[at:][:len(codes)]
			}
			k := 0
			if o != nil {
				k = e4m3Scaled(o, st, codes, s)
			}
			e4m3Run(o, st, codes, k, s, t, e4m3Steps)
		}
	}
	return nil
}

// e4m3Run writes codes[k:]'s values t[b]·s into vals and steps
// e4m3Steps[b]·|s| into steps (each as long as codes, unless nil), 32
// codes at a time over fixed-size arrays.
func e4m3Run(vals, steps []float32, codes []byte, k int, s float32, t, e4m3Steps *[256]float32) {
	as := absf(s)
	switch {
	case steps == nil:
		scaleTable(vals[k:len(codes)], codes[k:], t, s)
	case vals == nil:
		scaleTable(steps[k:len(codes)], codes[k:], e4m3Steps, as)
	default:
		codes = codes[k:]
		o, st := vals[k:][:len(codes)], steps[k:][:len(codes)]
		for len(codes) >= 32 {
			c, v, w := (*[32]byte)(codes), (*[32]float32)(o), (*[32]float32)(st)
			for i := 0; i < 32; i += 4 {
				b0, b1, b2, b3 := c[i], c[i+1], c[i+2], c[i+3]
				v[i], v[i+1], v[i+2], v[i+3] = t[b0]*s, t[b1]*s, t[b2]*s, t[b3]*s
				w[i], w[i+1], w[i+2], w[i+3] = e4m3Steps[b0]*as, e4m3Steps[b1]*as, e4m3Steps[b2]*as, e4m3Steps[b3]*as
			}
			codes, o, st = codes[32:], o[32:], st[32:]
		}
		for i, b := range codes {
			o[i], st[i] = t[b]*s, e4m3Steps[b]*as
		}
	}
}

// scaleTable writes tab[b]·s of each of codes into out (as long).
func scaleTable(out []float32, codes []byte, tab *[256]float32, s float32) {
	for len(codes) >= 32 {
		c, v := (*[32]byte)(codes), (*[32]float32)(out)
		for i := 0; i < 32; i += 4 {
			v[i], v[i+1], v[i+2], v[i+3] = tab[c[i]]*s, tab[c[i+1]]*s, tab[c[i+2]]*s, tab[c[i+3]]*s
		}
		codes, out = codes[32:], out[32:]
	}
	for i, b := range codes {
		out[i] = tab[b] * s
	}
}
