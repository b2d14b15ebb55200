package quant

import (
	"fmt"
	"math/bits"

	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// BNB4 is bitsandbytes' 4-bit NF4 or FP4 weight as save_pretrained writes
// it: weight U8 [⌈n/2⌉, 1], the flattened weight two values a byte with the
// first in the high nibble, beside weight.absmax, one per block of blocksize
// values (F32, or U8 under double quantization, then decoded through
// weight.nested_absmax F32 — one per nested block of 256 — and
// weight.nested_quant_map F32 [256], plus the nested offset). Its logical
// Dims are the quant state's shape folded to [rows, cols].
//
// Values follow the CUDA kernel (bitsandbytes-foundation/bitsandbytes
// csrc/kernels.cu kDequantizeBlockwise, and bitsandbytes/functional.py
// dequantize_4bit / dequantize_blockwise, at
// 95f9af309d4d5793847169c39288dcd3fcbdf564):
//   - absmax, nested: float32(nested_quant_map[q] · nested_absmax[b/256]),
//     then + offset, a separate float32 addition (absmax += offset);
//   - value = code[nibble] · absmax in float32, stored in the quant state's
//     dtype (BF16, F16: round to nearest even). code is the kernel's
//     nf4_dequantization_lut, or fp4_dequantization_lut[v&7] · (1 − 2·(v>>3)).
//
// The checkpoint's weight.quant_map is not what the kernel reads (it
// selects the table by quant_type); the scheme carries it as a part.
type BNB4 struct {
	fp4               bool
	blocksize         uint64
	out               tensorfile.DType
	nested            bool
	nestedBlocksize   uint64
	nestedOffset      float32
	parts             []Part
	code              *[16]float32
	absmaxSize, shift uint64
}

// BNB4Config is what a quant state says of a 4-bit weight.
type BNB4Config struct {
	FP4             bool             // quant_type "fp4" (else "nf4")
	Blocksize       uint64           // blocksize
	DType           tensorfile.DType // dtype: F32, BF16 or F16
	Nested          bool             // double quantization
	NestedBlocksize uint64           // nested_blocksize
	NestedOffset    float32          // nested_offset
}

// NewBNB4 returns the codec of a quant state.
func NewBNB4(q BNB4Config) (*BNB4, error) {
	if q.Blocksize < 2 || q.Blocksize&(q.Blocksize-1) != 0 || q.Blocksize > 1<<20 {
		return nil, fmt.Errorf("bitsandbytes 4-bit: blocksize %d is not a power of two", q.Blocksize)
	}
	if floatSize(q.DType) < 2 {
		return nil, fmt.Errorf("bitsandbytes 4-bit: dtype %s is not F32, BF16 or F16", q.DType)
	}
	c := &BNB4{fp4: q.FP4, blocksize: q.Blocksize, out: q.DType, code: &nf4Code, absmaxSize: 4,
		shift: uint64(bits.TrailingZeros64(q.Blocksize))}
	if q.FP4 {
		c.code = &fp4Code
	}
	c.parts = []Part{{Data, tensorfile.U8}, {Scale, tensorfile.F32}}
	if q.Nested {
		if q.NestedBlocksize == 0 {
			return nil, fmt.Errorf("bitsandbytes 4-bit: nested blocksize 0")
		}
		c.nested, c.nestedBlocksize, c.nestedOffset, c.absmaxSize = true, q.NestedBlocksize, q.NestedOffset, 1
		c.parts = []Part{{Data, tensorfile.U8}, {Scale, tensorfile.U8}, {Scale, tensorfile.F32}, {Table, tensorfile.F32}}
	}
	return c, nil
}

// nf4Code is csrc/kernels.cu's nf4_dequantization_lut.
var nf4Code = [16]float32{-1, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453, -0.28444138169288635,
	-0.18477343022823334, -0.09105003625154495, 0, 0.07958029955625534, 0.16093020141124725, 0.24611230194568634,
	0.33791524171829224, 0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1}

// fp4Code is dDequantizeFP4Tree: fp4_dequantization_lut[v&7] times the sign
// 1 − 2·(v>>3), a float32 product (so v = 8 is −0).
var fp4Code = func() (t [16]float32) {
	lut := [8]float32{0, 0.005208333333, 0.66666667, 1, 0.33333333, 0.5, 0.16666667, 0.25}
	for v := range 16 {
		sign := 1 - 2*float32(v>>3)
		t[v] = lut[v&7] * sign
	}
	return t
}()

func (c *BNB4) String() string {
	name := "NF4"
	if c.fp4 {
		name = "FP4"
	}
	s := fmt.Sprintf("bitsandbytes %s block %d", name, c.blocksize)
	if c.nested {
		s += " (double quant)"
	}
	return s
}
func (c *BNB4) Parts() []Part { return c.parts }

func (c *BNB4) Tile() Tile { return Tile{Rows: 1, Cols: 1} }

// geometry is the sizes of the parts of d.
func (c *BNB4) geometry(d Dims) (sizes [4]uint64, err error) {
	n, ok := d.Values()
	if !ok {
		return sizes, fmt.Errorf("%s: %d × %d values overflow", c, d.Rows, d.Cols)
	}
	blocks := ceilDiv(n, c.blocksize)
	sizes[0], sizes[1] = ceilDiv(n, 2), blocks*c.absmaxSize
	if c.nested {
		sizes[2], sizes[3] = ceilDiv(blocks, c.nestedBlocksize)*4, 256*4
	}
	return sizes, nil
}

func (c *BNB4) Sizes(d Dims, sizes []uint64) error {
	s, err := c.geometry(d)
	if err != nil {
		return err
	}
	if len(sizes) < len(c.parts) {
		return fmt.Errorf("%s: sizes for %d parts, want %d", c, len(sizes), len(c.parts))
	}
	copy(sizes, s[:len(c.parts)])
	return nil
}

func (c *BNB4) Spans(d Dims, r0, r1 uint64, dst []Span) ([]Span, error) {
	if _, err := c.geometry(d); err != nil {
		return dst, err
	}
	if err := CheckRange(c.Tile(), d, r0, r1); err != nil {
		return dst, fmt.Errorf("%s: %w", c, err)
	}
	e0, e1 := r0*d.Cols, r1*d.Cols
	b0, b1 := e0>>c.shift, ceilDiv(e1, c.blocksize)
	dst = append(dst, Span{Part: 0, Offset: e0 / 2, Len: ceilDiv(e1, 2) - e0/2, Count: 1},
		Span{Part: 1, Offset: b0 * c.absmaxSize, Len: (b1 - b0) * c.absmaxSize, Count: 1})
	if c.nested {
		n0, n1 := b0/c.nestedBlocksize, ceilDiv(b1, c.nestedBlocksize)
		dst = append(dst, Span{Part: 2, Offset: n0 * 4, Len: (n1 - n0) * 4, Count: 1}, whole(3, 1024))
	}
	return dst, nil
}

func (c *BNB4) Decode(d Dims, r0, r1 uint64, parts [][]byte, dst []float32) error {
	return c.decode(d, r0, r1, parts, dst, false)
}

// Steps writes the step of each value of rows [r0, r1) (see bnb_steps.go).
func (c *BNB4) Steps(d Dims, r0, r1 uint64, parts [][]byte, dst []float32) error {
	return c.decode(d, r0, r1, parts, dst, true)
}

// decode writes the values of rows [r0, r1) or, when steps, their steps.
func (c *BNB4) decode(d Dims, r0, r1 uint64, parts [][]byte, dst []float32, steps bool) error {
	var buf [4]Span
	spans, err := c.Spans(d, r0, r1, buf[:0])
	if err != nil {
		return err
	}
	e0, e1 := r0*d.Cols, r1*d.Cols
	if err := checkParts(c, spans, parts, dst, e1-e0); err != nil {
		return err
	}
	b0 := e0 >> c.shift
	n0 := b0 / max(c.nestedBlocksize, 1)
	data, code := parts[0], c.code
	var st bnbSteps
	if steps {
		st.init(c, parts)
	}
	for b := b0; b<<c.shift < e1; b++ {
		var a, da float32
		if c.nested {
			q := parts[1][b-b0]
			if steps {
				da = st.nested[q] * absf(floatAt(tensorfile.F32, parts[2], b/c.nestedBlocksize-n0))
			}
			a = float32(floatAt(tensorfile.F32, parts[3], uint64(q))*floatAt(tensorfile.F32, parts[2], b/c.nestedBlocksize-n0)) + c.nestedOffset
		} else {
			a = floatAt(tensorfile.F32, parts[1], b-b0)
		}
		var lut [16]float32 // the block's 16 values, stored in the output dtype
		for i, v := range code {
			lut[i] = roundTo(c.out, v*a)
		}
		if steps {
			st.block(c, &lut, a, da)
		}
		lo, hi := max(e0, b<<c.shift), min(e1, (b+1)<<c.shift)
		out := dst[lo-e0 : hi-e0]
		in := data[lo/2-e0/2:]
		if lo%2 == 1 { // a row of odd length starts on a low nibble
			out[0], out, in = lut[in[0]&0xF], out[1:], in[1:]
		}
		pairs := len(out) / 2
		for i, v := range in[:pairs] {
			out[2*i], out[2*i+1] = lut[v>>4], lut[v&0xF]
		}
		if len(out)%2 == 1 {
			out[len(out)-1] = lut[in[pairs]>>4]
		}
	}
	return nil
}
