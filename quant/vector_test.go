package quant

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// vectorScales are block scales for the vector loops' tests: ordinary,
// negative, subnormal, huge, zero, infinite and NaN ones.
var vectorScales = []float32{1, 0.0123, -3.5, 1e-40, -1e-44, 3e38, 0, float32(math.Copysign(0, -1)),
	float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), math.Float32frombits(0x7F800001)}

// TestE4M3Scaled checks the E4M3 loops (vector where the CPU has them)
// against the table, bit for bit: every code, at every offset of a run,
// with every scale.
func TestE4M3Scaled(t *testing.T) {
	e4m3Steps := e4m3StepsTable()
	tab := f8Tables()[tensorfile.F8_E4M3]
	codes := make([]byte, 0, 300)
	for b := range 256 {
		codes = append(codes, byte(b))
	}
	codes = append(codes, 0x7F, 0xFF, 0x01, 0x81, 0x00, 0x80, 0x7E, 0xFE, 0x08, 0x88, 0x07)
	c, err := NewBlockFP8(1, uint64(len(codes)))
	if err != nil {
		t.Fatal(err)
	}
	d := Dims{Rows: 1, Cols: uint64(len(codes))}
	for _, s := range vectorScales {
		for lo := range uint64(9) {
			scale := binary.LittleEndian.AppendUint32(nil, math.Float32bits(s))
			n := uint64(len(codes)) - lo
			vals, steps := make([]float32, n), make([]float32, n)
			if err := c.DecodeRange(d, 0, 1, [][]byte{codes, scale}, lo, uint64(len(codes)), vals, steps); err != nil {
				t.Fatal(err)
			}
			only, stepsOnly := make([]float32, len(codes)), make([]float32, len(codes))
			if err := c.Decode(d, 0, 1, [][]byte{codes, scale}, only); err != nil {
				t.Fatal(err)
			}
			if err := c.Steps(d, 0, 1, [][]byte{codes, scale}, stepsOnly); err != nil {
				t.Fatal(err)
			}
			for i, b := range codes[lo:] {
				want, wantStep := tab[b]*s, e4m3Steps[b]*absf(s)
				if math.Float32bits(vals[i]) != math.Float32bits(want) || math.Float32bits(only[lo+uint64(i)]) != math.Float32bits(want) ||
					math.Float32bits(steps[i]) != math.Float32bits(wantStep) || math.Float32bits(stepsOnly[lo+uint64(i)]) != math.Float32bits(wantStep) {
					t.Fatalf("scale %g, code %#x at %d: value %#x (alone %#x), step %#x; want %#x, %#x", s, b, lo+uint64(i),
						math.Float32bits(vals[i]), math.Float32bits(only[lo+uint64(i)]), math.Float32bits(steps[i]), math.Float32bits(want), math.Float32bits(wantStep))
				}
			}
		}
	}
}

// TestQ8Scaled checks Q8_0's loops against their definitions, bit for
// bit, on random codes with every half scale among them.
func TestQ8Scaled(t *testing.T) {
	twiceAbsInt8 := twiceAbsInt8Table()
	rng := rand.New(rand.NewPCG(5, 6))
	c, _ := GGML(tensorfile.Q8_0)
	rd := c.(interface {
		DecodeRange(d Dims, r0, r1 uint64, parts [][]byte, lo, hi uint64, dst, steps []float32) error
	})
	const blocks = 1 << 16 // every half as a scale
	b := make([]byte, 34*blocks)
	for i := range blocks {
		blk := b[34*i : 34*(i+1)]
		binary.LittleEndian.PutUint16(blk, uint16(i))
		for j := range 32 {
			blk[2+j] = byte(rng.Uint32())
		}
		blk[2+i%32] = 0x80 // -128
	}
	d := Dims{Rows: 1, Cols: 32 * blocks}
	vals, steps := make([]float32, 32*blocks), make([]float32, 32*blocks)
	if err := rd.DecodeRange(d, 0, 1, [][]byte{b}, 0, d.Cols, vals, steps); err != nil {
		t.Fatal(err)
	}
	only := make([]float32, 32*blocks)
	if err := c.Decode(d, 0, 1, [][]byte{b}, only); err != nil {
		t.Fatal(err)
	}
	for i := range blocks {
		blk := b[34*i : 34*(i+1)]
		dd := F16ToFloat32(binary.LittleEndian.Uint16(blk))
		ad := absf(dd)
		for j, q := range blk[2:] {
			k := 32*i + j
			want := float32(int8(q)) * dd
			wantStep := ad + twiceAbsInt8[q]*ad*halfULP
			if math.Float32bits(vals[k]) != math.Float32bits(want) || math.Float32bits(only[k]) != math.Float32bits(want) ||
				math.Float32bits(steps[k]) != math.Float32bits(wantStep) {
				t.Fatalf("d %#x, q %d: value %#x (alone %#x), step %#x; want %#x, %#x", binary.LittleEndian.Uint16(blk), int8(q),
					math.Float32bits(vals[k]), math.Float32bits(only[k]), math.Float32bits(steps[k]), math.Float32bits(want), math.Float32bits(wantStep))
			}
		}
	}
}

// TestGPTQVector checks GPTQ int4 decoding with the vector loops against
// the Go loops, bit for bit, values and steps, in ranges and whole.
func TestGPTQVector(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, group := range []uint64{128, 32, 0} {
		c, err := NewGPTQ(GPTQConfig{Bits: 4, GroupSize: group, Scale: tensorfile.F16, ZeroOffset: 1})
		if err != nil {
			t.Fatal(err)
		}
		d := Dims{Rows: 48, Cols: 256}
		sizes := make([]uint64, 3)
		if err := c.Sizes(d, sizes); err != nil {
			t.Fatal(err)
		}
		parts := make([][]byte, 3)
		for i, n := range sizes {
			parts[i] = make([]byte, n)
			for k := range parts[i] {
				parts[i][k] = byte(rng.Uint32())
			}
		}
		decode := func(vector bool, lo, hi uint64) ([]float32, []float32) {
			defer func(old func() bool) { hasAVX2 = old }(hasAVX2)
			if !vector {
				hasAVX2 = func() bool { return false }
			}
			vals, steps := make([]float32, hi-lo), make([]float32, hi-lo)
			if err := c.DecodeRange(d, 0, d.Rows, parts, lo, hi, vals, steps); err != nil {
				t.Fatal(err)
			}
			return vals, steps
		}
		for _, r := range [][2]uint64{{0, d.Rows * d.Cols}, {8, 8 * 100}, {256 + 64, 3 * 256}} {
			gv, gs := decode(true, r[0], r[1])
			wv, ws := decode(false, r[0], r[1])
			for i := range gv {
				if math.Float32bits(gv[i]) != math.Float32bits(wv[i]) || math.Float32bits(gs[i]) != math.Float32bits(ws[i]) {
					t.Fatalf("group %d, values %v, at %d: %#x, step %#x; want %#x, %#x", group, r, i,
						math.Float32bits(gv[i]), math.Float32bits(gs[i]), math.Float32bits(wv[i]), math.Float32bits(ws[i]))
				}
			}
		}
	}
}

// TestGGMLVector checks the GGML decoders with vector loops against the Go
// loops, bit for bit, values and steps, on random blocks (NaN and
// infinite scales among them).
func TestGGMLVector(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, e := range []tensorfile.Encoding{tensorfile.Q8_0, tensorfile.Q4_K} {
		c, _ := GGML(e)
		rd := c.(interface {
			DecodeRange(d Dims, r0, r1 uint64, parts [][]byte, lo, hi uint64, dst, steps []float32) error
		})
		blk := e.Block()
		d := Dims{Rows: 3, Cols: 64 * blk.Elements}
		data := make([]byte, d.Rows*d.Cols/blk.Elements*blk.Bytes)
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		decode := func(vector bool) ([]float32, []float32, []float32) {
			defer func(old func() bool) { hasAVX2 = old }(hasAVX2)
			if !vector {
				hasAVX2 = func() bool { return false }
			}
			n := d.Rows * d.Cols
			vals, steps, only := make([]float32, n), make([]float32, n), make([]float32, n)
			if err := rd.DecodeRange(d, 0, d.Rows, [][]byte{data}, 0, n, vals, steps); err != nil {
				t.Fatal(err)
			}
			if err := c.Decode(d, 0, d.Rows, [][]byte{data}, only); err != nil {
				t.Fatal(err)
			}
			return vals, steps, only
		}
		gv, gs, go1 := decode(true)
		wv, ws, wo := decode(false)
		for i := range gv {
			if math.Float32bits(gv[i]) != math.Float32bits(wv[i]) || math.Float32bits(gs[i]) != math.Float32bits(ws[i]) ||
				math.Float32bits(go1[i]) != math.Float32bits(wo[i]) {
				t.Fatalf("%s at %d: %#x, step %#x, alone %#x; want %#x, %#x, %#x", e, i, math.Float32bits(gv[i]), math.Float32bits(gs[i]),
					math.Float32bits(go1[i]), math.Float32bits(wv[i]), math.Float32bits(ws[i]), math.Float32bits(wo[i]))
			}
		}
	}
}

// TestGroupIndexOrder checks groupIndex's counted column order against
// c/group.
func TestGroupIndexOrder(t *testing.T) {
	for _, tc := range []struct {
		gidx  []uint32
		group uint64
		want  bool
	}{
		{[]uint32{0, 0, 1, 1, 2}, 2, true},
		{[]uint32{0, 1, 1, 1, 2}, 2, false},
		{[]uint32{0, 0, 0, 1, 1}, 3, true},
		{[]uint32{0, 0, 1, 1, 1}, 3, false},
		{[]uint32{0, 0, 0, 0, 0}, 5, true},
		{[]uint32{0, 1, 2, 3, 4}, 1, true},
		{[]uint32{1, 0, 2, 3, 4}, 1, false},
	} {
		b := make([]byte, 0, 4*len(tc.gidx))
		for _, g := range tc.gidx {
			b = binary.LittleEndian.AppendUint32(b, g)
		}
		got, err := groupIndex(tensorfile.I32, b, uint64(len(tc.gidx)), tc.group, 5, false)
		if err != nil || got != tc.want || inColumnOrder(b, tc.group) != tc.want {
			t.Errorf("%v by %d: %v, %v, %v; want %v", tc.gidx, tc.group, got, inColumnOrder(b, tc.group), err, tc.want)
		}
	}
}

// TestInColumnOrder checks the two-at-a-time column order test against
// c/group, on every column count and group size up to 40 and with every
// single entry off by one.
func TestInColumnOrder(t *testing.T) {
	for cols := range 41 {
		for group := 1; group <= 41; group++ {
			b := make([]byte, 4*cols)
			for c := range cols {
				binary.LittleEndian.PutUint32(b[4*c:], uint32(c/group))
			}
			if !inColumnOrder(b, uint64(group)) {
				t.Fatalf("%d columns by %d: not in column order", cols, group)
			}
			for c := range cols {
				for _, delta := range []uint32{1, 1 << 31} {
					binary.LittleEndian.PutUint32(b[4*c:], uint32(c/group)+delta)
					if inColumnOrder(b, uint64(group)) {
						t.Fatalf("%d columns by %d, entry %d off by %#x: in column order", cols, group, c, delta)
					}
					binary.LittleEndian.PutUint32(b[4*c:], uint32(c/group))
				}
			}
		}
	}
}

// TestFill16F16 checks the fills of a 4-bit group's tables, with the
// vector loops and with the Go ones, against the general loop (zeroScaleLUT
// and affineStep), bit for bit, on every F16 scale and zeros around the
// grid.
func TestFill16F16(t *testing.T) {
	for h := range 1 << 16 {
		s := F16ToFloat32(uint16(h))
		for _, z := range []int32{0, 1, 8, 9, 16, -3} {
			var want affineLUTs
			zeroScaleLUT(want.vals[:16], z, s, tensorfile.F16)
			for q, v := range want.vals[:16] {
				want.steps[q] = affineStep(s, v, tensorfile.F16)
			}
			var got affineLUTs
			got.fill(16, z, s, tensorfile.F16, true, true)
			var goLoop affineLUTs
			func() {
				defer func(old func() bool) { hasAVX2 = old }(hasAVX2)
				hasAVX2 = func() bool { return false }
				goLoop.fill(16, z, s, tensorfile.F16, true, true)
			}()
			for q := range 16 {
				if math.Float32bits(goLoop.vals[q]) != math.Float32bits(want.vals[q]) || math.Float32bits(goLoop.steps[q]) != math.Float32bits(want.steps[q]) {
					t.Fatalf("Go loop: scale %#x, zero %d, code %d: %#x, step %#x; want %#x, %#x", h, z, q,
						math.Float32bits(goLoop.vals[q]), math.Float32bits(goLoop.steps[q]), math.Float32bits(want.vals[q]), math.Float32bits(want.steps[q]))
				}
				if math.Float32bits(got.vals[q]) != math.Float32bits(want.vals[q]) || math.Float32bits(got.steps[q]) != math.Float32bits(want.steps[q]) {
					t.Fatalf("scale %#x, zero %d, code %d: %#x, step %#x; want %#x, %#x", h, z, q,
						math.Float32bits(got.vals[q]), math.Float32bits(got.steps[q]), math.Float32bits(want.vals[q]), math.Float32bits(want.steps[q]))
				}
			}
		}
	}
}

// TestWiden checks DecodeFloat64 of BF16 and F32 with the vector loops
// against the Go loops, bit for bit: every BF16 pattern, and F32 patterns
// around every BF16 one (signalling NaNs among them), at every length
// around a vector's.
func TestWiden(t *testing.T) {
	for _, d := range []tensorfile.DType{tensorfile.BF16, tensorfile.F32} {
		size := d.Bits() / 8
		src := make([]byte, 0, size<<16)
		for h := range 1 << 16 {
			if d == tensorfile.BF16 {
				src = binary.LittleEndian.AppendUint16(src, uint16(h))
			} else {
				src = binary.LittleEndian.AppendUint32(src, uint32(h)<<16|uint32(h*7919)&0xFFFF)
			}
		}
		decode := func(vector bool, src []byte) []float64 {
			defer func(old func() bool) { hasAVX2 = old }(hasAVX2)
			if !vector {
				hasAVX2 = func() bool { return false }
			}
			dst := make([]float64, len(src)/size)
			if n := DecodeFloat64(d, src, dst); n != len(dst) {
				t.Fatalf("%s: %d values of %d", d, n, len(dst))
			}
			return dst
		}
		for _, n := range []int{1 << 16, 0, 1, 7, 8, 9, 15, 16, 17, 33} {
			for _, at := range []int{0, 1, 3} {
				if at+n > 1<<16 {
					continue
				}
				part := src[size*at : size*(at+n)]
				got, want := decode(true, part), decode(false, part)
				for i := range want {
					if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
						t.Fatalf("%s, %d values from %d, at %d: %#x, want %#x", d, n, at, i, math.Float64bits(got[i]), math.Float64bits(want[i]))
					}
				}
			}
		}
	}
}

// TestE4M3Blocks checks block FP8 decoding with the vector loops against
// the Go loops, bit for bit, values and steps, in ranges and whole, with
// blocks of a vector's width and more, a partial last block, and every
// scale of vectorScales (NaN ones among them) in the rows' blocks.
func TestE4M3Blocks(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, tc := range []struct{ rows, cols, bRows, bCols uint64 }{
		{4, 80, 2, 16}, {4, 72, 2, 16}, {3, 256, 2, 128}, {5, 24, 5, 8}, {2, 36, 1, 12},
	} {
		c, err := NewBlockFP8(tc.bRows, tc.bCols)
		if err != nil {
			t.Fatal(err)
		}
		d := Dims{Rows: tc.rows, Cols: tc.cols}
		sizes := make([]uint64, 2)
		if err := c.Sizes(d, sizes); err != nil {
			t.Fatal(err)
		}
		codes, scales := make([]byte, sizes[0]), make([]byte, 0, sizes[1])
		for i := range codes {
			codes[i] = byte(rng.Uint32())
		}
		for i := range sizes[1] / 4 {
			s := vectorScales[rng.IntN(len(vectorScales))]
			if i%3 != 0 {
				s = vectorScales[0]
			}
			scales = binary.LittleEndian.AppendUint32(scales, math.Float32bits(s))
		}
		parts := [][]byte{codes, scales}
		decode := func(vector bool, lo, hi uint64, withSteps bool) ([]float32, []float32) {
			defer func(old func() bool) { hasAVX2 = old }(hasAVX2)
			if !vector {
				hasAVX2 = func() bool { return false }
			}
			vals := make([]float32, hi-lo)
			var steps []float32
			if withSteps {
				steps = make([]float32, hi-lo)
			}
			if err := c.DecodeRange(d, 0, d.Rows, parts, lo, hi, vals, steps); err != nil {
				t.Fatal(err)
			}
			return vals, steps
		}
		n := d.Rows * d.Cols
		for _, r := range [][2]uint64{{0, n}, {1, n - 3}, {tc.cols + tc.bCols, n}, {8, min(2*tc.cols+8, n)}} {
			for _, withSteps := range []bool{true, false} {
				gv, gs := decode(true, r[0], r[1], withSteps)
				wv, ws := decode(false, r[0], r[1], withSteps)
				for i := range gv {
					if math.Float32bits(gv[i]) != math.Float32bits(wv[i]) || withSteps && math.Float32bits(gs[i]) != math.Float32bits(ws[i]) {
						t.Fatalf("%+v, values %v, at %d: %#x; want %#x", tc, r, i, math.Float32bits(gv[i]), math.Float32bits(wv[i]))
					}
				}
			}
		}
	}
}

// rangeCodec is a codec that decodes ranges of values with their steps.
type rangeCodec interface {
	Codec
	Steps(d Dims, r0, r1 uint64, parts [][]byte, dst []float32) error
	DecodeRange(d Dims, r0, r1 uint64, parts [][]byte, lo, hi uint64, dst, steps []float32) error
}
