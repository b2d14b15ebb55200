package quant

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// Plain, element-by-element decoders straight from the upstream formulas:
// the references that the tuned Go loops and the vector loops are both
// checked against, bit for bit.

// refQ4K is dequantize_row_q4_K of one block and stepsQ4K's steps.
func refQ4K(b []byte, y, steps []float32) {
	d, dmin := f16At(b), f16At(b[2:])
	for j := range 8 {
		sc, m := scaleMinK4(j, b[4:16])
		ds, mm := d*float32(sc), dmin*float32(m)
		for i := range 32 {
			q := b[16+32*(j/2)+i] >> (4 * (j % 2)) & 0xF
			y[32*j+i] = float32(ds*float32(q)) - mm
			steps[32*j+i] = step(ds, 15)
		}
	}
}

// refGPTQ is element [o, col] of a whole GPTQ weight of d (parts whole) and
// its step.
func refGPTQ(c *GPTQ, d Dims, parts [][]byte, group, o, col uint64) (v, s float32) {
	mask := uint32(1)<<c.bits - 1
	g := col / group
	if len(parts) == 4 {
		g = uint64(word(parts[3], col))
	}
	q := int32(word(parts[0], col/c.pack*d.Rows+o) >> (col % c.pack * c.bits) & mask)
	z := int32(word(parts[2], g*(d.Rows/c.pack)+o/c.pack)>>(o%c.pack*c.bits)&mask) + c.offset
	sd := c.parts[1].DType
	sc := floatAt(sd, parts[1], g*d.Rows+o)
	v = roundTo(sd, float32(q-z)*sc)
	return v, affineStep(sc, v, sd)
}

// sameBits fails t at the first value of got whose bits are not want's.
func sameBits(t *testing.T, what string, got, want []float32) {
	t.Helper()
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s at %d: %#x (%g), want %#x (%g)", what, i, math.Float32bits(got[i]), got[i], math.Float32bits(want[i]), want[i])
		}
	}
}

// withVector runs f with the vector loops (where the CPU has them) and
// without.
func withVector(f func(vector bool)) {
	for _, vector := range []bool{true, false} {
		func() {
			defer func(old func() bool) { hasAVX2 = old }(hasAVX2)
			if !vector {
				hasAVX2 = func() bool { return false }
			}
			f(vector)
		}()
	}
}

// TestQ4KReference checks Q4_K's Decode and DecodeRange, values and
// steps, against refQ4K on random blocks (any half scales: NaN, infinite,
// subnormal among them).
func TestQ4KReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	c, _ := GGML(tensorfile.Q4_K)
	rd := c.(interface {
		DecodeRange(d Dims, r0, r1 uint64, parts [][]byte, lo, hi uint64, dst, steps []float32) error
	})
	const blocks = 4096
	data := make([]byte, 144*blocks)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	wantV, wantS := make([]float32, 256*blocks), make([]float32, 256*blocks)
	for i := range blocks {
		refQ4K(data[144*i:], wantV[256*i:], wantS[256*i:])
	}
	d := Dims{Rows: 4, Cols: 256 * blocks / 4}
	withVector(func(vector bool) {
		n := d.Rows * d.Cols
		only := make([]float32, n)
		if err := c.Decode(d, 0, d.Rows, [][]byte{data}, only); err != nil {
			t.Fatal(err)
		}
		sameBits(t, fmt.Sprintf("Decode, vector %v", vector), only, wantV)
		for _, piece := range []uint64{256, 256 * 7, n} {
			for lo := uint64(0); lo < n; lo += piece {
				hi := min(lo+piece, n)
				v, s := make([]float32, hi-lo), make([]float32, hi-lo)
				if err := rd.DecodeRange(d, 0, d.Rows, [][]byte{data}, lo, hi, v, s); err != nil {
					t.Fatal(err)
				}
				sameBits(t, fmt.Sprintf("values [%d, %d), vector %v", lo, hi, vector), v, wantV[lo:hi])
				sameBits(t, fmt.Sprintf("steps [%d, %d), vector %v", lo, hi, vector), s, wantS[lo:hi])
			}
		}
	})
}

// checkReference checks c's Decode, Steps and DecodeRange (in pieces of
// several sizes), with the vector loops and without, against ref, which
// returns the value and step of element [o, col], bit for bit.
func checkReference(t *testing.T, c rangeCodec, d Dims, parts [][]byte, ref func(o, col uint64) (v, s float32)) {
	t.Helper()
	n := d.Rows * d.Cols
	wantV, wantS := make([]float32, n), make([]float32, n)
	for o := range d.Rows {
		for col := range d.Cols {
			wantV[o*d.Cols+col], wantS[o*d.Cols+col] = ref(o, col)
		}
	}
	withVector(func(vector bool) {
		v, s := make([]float32, n), make([]float32, n)
		if err := c.Decode(d, 0, d.Rows, parts, v); err != nil {
			t.Fatal(err)
		}
		sameBits(t, fmt.Sprintf("%s: Decode, vector %v", c, vector), v, wantV)
		if err := c.Steps(d, 0, d.Rows, parts, s); err != nil {
			t.Fatal(err)
		}
		sameBits(t, fmt.Sprintf("%s: Steps, vector %v", c, vector), s, wantS)
		tc := c.Tile().Cols
		for _, piece := range []uint64{5 * tc, d.Cols + tc, n} {
			for lo := uint64(0); lo < n; lo += piece {
				hi := min(lo+piece, n)
				if err := c.DecodeRange(d, 0, d.Rows, parts, lo, hi, v[:hi-lo], s[:hi-lo]); err != nil {
					t.Fatal(err)
				}
				sameBits(t, fmt.Sprintf("%s: values [%d, %d), vector %v", c, lo, hi, vector), v[:hi-lo], wantV[lo:hi])
				sameBits(t, fmt.Sprintf("%s: steps [%d, %d), vector %v", c, lo, hi, vector), s[:hi-lo], wantS[lo:hi])
				if err := c.DecodeRange(d, 0, d.Rows, parts, lo, hi, v[:hi-lo], nil); err != nil {
					t.Fatal(err)
				}
				sameBits(t, fmt.Sprintf("%s: values alone [%d, %d), vector %v", c, lo, hi, vector), v[:hi-lo], wantV[lo:hi])
			}
		}
	})
}

// refAWQ is element [o, col] of a whole AWQ weight of d and its step.
func refAWQ(c *AWQ, d Dims, parts [][]byte, o, col uint64) (v, s float32) {
	g, nw, shift := col/c.group, d.Rows/8, 4*awqNibble[o%8]
	q := int32(word(parts[0], col*nw+o/8) >> shift & 0xF)
	z := int32(word(parts[2], g*nw+o/8) >> shift & 0xF)
	sd := c.parts[1].DType
	sc := floatAt(sd, parts[1], g*d.Rows+o)
	v = roundTo(sd, float32(q-z)*sc)
	return v, affineStep(sc, v, sd)
}

// refMLX is element [o, col] of a whole MLX affine weight of d and its
// step: mlx's dequantize, scale·q + bias, each step rounded to the scales'
// dtype.
func refMLX(c *MLXAffine, d Dims, parts [][]byte, o, col uint64) (v, s float32) {
	t := c.parts[1].DType
	k, i := o*(d.Cols/c.group)+col/c.group, col%c.group
	q := word(parts[0], k*(c.group/c.pack)+i/c.pack) >> (i % c.pack * c.bits) & (1<<c.bits - 1)
	sc, b := floatAt(t, parts[1], k), floatAt(t, parts[2], k)
	p := roundTo(t, float32(float32(q)*sc))
	v = roundTo(t, p+b)
	return v, affineStep(sc, p, t) + 2*unitRoundoff(t)*absf(v)
}

// refPack is element [r, col] of a whole pack-quantized weight of d and
// its step.
func refPack(c *PackQuantized, d Dims, parts [][]byte, r, col uint64) (v, s float32) {
	g, _ := c.geometry(d)
	mask := uint32(1)<<c.bits - 1
	gi := col / g.group
	if c.gidx {
		if x := int32(word(parts[len(parts)-1], col)); x >= 0 {
			gi = uint64(x)
		}
	}
	q := int32(word(parts[0], r*g.words+col/c.pack) >> (col % c.pack * c.bits) & mask)
	z := int32(1) << (c.bits - 1)
	if c.asym {
		z = int32(word(parts[2], r/c.pack*g.groups+gi) >> (r % c.pack * c.bits) & mask)
	}
	sd := c.parts[1].DType
	sc := floatAt(sd, parts[1], r*g.groups+gi)
	v = roundTo(sd, float32(q-z)*sc)
	return v, affineStep(sc, v, sd)
}

// The GGML decoders as they were before the fused loops (each checked
// against ggml's own vectors in TestGGMLCodecs): the values' references.

func refDecodeQ4_0(b []byte, y []float32) {
	d := f16At(b)
	for j, q := range b[2:18] {
		y[j] = float32(int(q&0xF)-8) * d
		y[j+16] = float32(int(q>>4)-8) * d
	}
}

func refDecodeQ4_1(b []byte, y []float32) {
	d, m := f16At(b), f16At(b[2:])
	for j, q := range b[4:20] {
		y[j] = float32(float32(q&0xF)*d) + m
		y[j+16] = float32(float32(q>>4)*d) + m
	}
}

func refDecodeMXFP4(b []byte, y []float32) {
	d := e8m0Half(b[0])
	for j, q := range b[1:17] {
		y[j] = float32(kvaluesMXFP4[q&0xF]) * d
		y[j+16] = float32(kvaluesMXFP4[q>>4]) * d
	}
}

func refDecodeQ5K(b []byte, y []float32) {
	d, dmin := f16At(b), f16At(b[2:])
	scales, qh, qs := b[4:16], b[16:48], b[48:176]
	k := 0
	u1, u2 := byte(1), byte(2)
	for j := 0; j < 8; j += 2 {
		sc1, m1 := scaleMinK4(j, scales)
		sc2, m2 := scaleMinK4(j+1, scales)
		d1, min1 := d*float32(sc1), dmin*float32(m1)
		d2, min2 := d*float32(sc2), dmin*float32(m2)
		ql := qs[16*j : 16*j+32]
		for l, v := range ql {
			q := v & 0xF
			if qh[l]&u1 != 0 {
				q += 16
			}
			y[k] = float32(d1*float32(q)) - min1
			k++
		}
		for l, v := range ql {
			q := v >> 4
			if qh[l]&u2 != 0 {
				q += 16
			}
			y[k] = float32(d2*float32(q)) - min2
			k++
		}
		u1, u2 = u1<<2, u2<<2
	}
}

func refDecodeQ6K(b []byte, y []float32) {
	d := f16At(b[208:])
	for n := range 2 {
		ql, qh, sc := b[64*n:64*n+64], b[128+32*n:128+32*n+32], b[192+8*n:192+8*n+8]
		out := y[128*n : 128*n+128]
		for l := range 32 {
			is := l / 16
			q1 := int(ql[l]&0xF|((qh[l]>>0)&3)<<4) - 32
			q2 := int(ql[l+32]&0xF|((qh[l]>>2)&3)<<4) - 32
			q3 := int(ql[l]>>4|((qh[l]>>4)&3)<<4) - 32
			q4 := int(ql[l+32]>>4|((qh[l]>>6)&3)<<4) - 32
			out[l] = float32(d*float32(int8(sc[is]))) * float32(q1)
			out[l+32] = float32(d*float32(int8(sc[is+2]))) * float32(q2)
			out[l+64] = float32(d*float32(int8(sc[is+4]))) * float32(q3)
			out[l+96] = float32(d*float32(int8(sc[is+6]))) * float32(q4)
		}
	}
}

// TestGGMLFused checks each GGML type's DecodeRange, values and steps,
// and Decode against the reference decoders and the per-block step
// functions (Steps), bit for bit, on random blocks whose halves take every
// pattern (NaN, infinite and subnormal scales among them).
func TestGGMLFused(t *testing.T) {
	rng := rand.New(rand.NewPCG(35, 36))
	refs := map[tensorfile.Encoding]ggmlBlock{
		tensorfile.Q4_0: refDecodeQ4_0, tensorfile.Q4_1: refDecodeQ4_1, tensorfile.MXFP4: refDecodeMXFP4,
		tensorfile.Q5_K: refDecodeQ5K, tensorfile.Q6_K: refDecodeQ6K,
		tensorfile.Q8_0: nil, tensorfile.Q4_K: nil, tensorfile.Q5_0: nil, tensorfile.Q5_1: nil, tensorfile.Q2_K: nil, tensorfile.Q3_K: nil,
	}
	for e, ref := range refs {
		c, _ := GGML(e)
		s := c.(*ggmlStepped)
		if ref == nil {
			ref = s.decode
		}
		blk := e.Block()
		const blocks = 1 << 16 // a block for every half
		data := make([]byte, blocks*blk.Bytes)
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		for i := range uint64(blocks) {
			b := data[i*blk.Bytes : (i+1)*blk.Bytes]
			for _, at := range ggmlHalves[e] {
				binary.LittleEndian.PutUint16(b[at:], uint16(i+uint64(at)*977))
			}
		}
		n := uint64(blocks) * blk.Elements
		wantV, wantS := make([]float32, n), make([]float32, n)
		for i := range uint64(blocks) {
			ref(data[i*blk.Bytes:(i+1)*blk.Bytes], wantV[i*blk.Elements:(i+1)*blk.Elements])
			s.steps(data[i*blk.Bytes:(i+1)*blk.Bytes], wantS[i*blk.Elements:(i+1)*blk.Elements])
		}
		d := Dims{Rows: 16, Cols: n / 16}
		withVector(func(vector bool) {
			v, st := make([]float32, n), make([]float32, n)
			if err := c.Decode(d, 0, d.Rows, [][]byte{data}, v); err != nil {
				t.Fatal(err)
			}
			sameBits(t, fmt.Sprintf("%s Decode, vector %v", e, vector), v, wantV)
			if err := s.DecodeRange(d, 0, d.Rows, [][]byte{data}, 0, n, v, st); err != nil {
				t.Fatal(err)
			}
			sameBits(t, fmt.Sprintf("%s values, vector %v", e, vector), v, wantV)
			sameBits(t, fmt.Sprintf("%s steps, vector %v", e, vector), st, wantS)
		})
	}
}

// ggmlHalves are the offsets of the halves in each GGML block (MXFP4's
// scale is a byte: none).
var ggmlHalves = map[tensorfile.Encoding][]int{
	tensorfile.Q4_0: {0}, tensorfile.Q4_1: {0, 2}, tensorfile.Q5_0: {0}, tensorfile.Q5_1: {0, 2}, tensorfile.Q8_0: {0},
	tensorfile.Q2_K: {80, 82}, tensorfile.Q3_K: {108}, tensorfile.Q4_K: {0, 2}, tensorfile.Q5_K: {0, 2}, tensorfile.Q6_K: {208},
}
