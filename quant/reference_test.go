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

// TestGPTQReference checks GPTQ's Decode, Steps and DecodeRange against
// refGPTQ for every width, group, scale dtype and g_idx, normal and any
// scales (NaN, infinite, subnormal, ones whose products overflow F16).
func TestGPTQReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(33, 34))
	for _, bits := range []uint64{2, 4, 8} {
		for _, group := range []uint64{0, 32, 128} {
			for _, sd := range []tensorfile.DType{tensorfile.F16, tensorfile.BF16} {
				for _, gidx := range []bool{false, true} {
					c, err := NewGPTQ(GPTQConfig{Bits: bits, GroupSize: group, Scale: sd, ZeroOffset: 1, GIdx: gidx})
					if err != nil {
						t.Fatal(err)
					}
					d := Dims{Rows: 32, Cols: 512}
					g, _ := c.geometry(d)
					for _, wild := range []bool{false, true} {
						parts := randomParts(t, c, d, rng, wild, g.group)
						if gidx && !wild {
							for col := range d.Cols {
								binary.LittleEndian.PutUint32(parts[3][4*col:], uint32(col/g.group))
							}
						}
						n := d.Rows * d.Cols
						wantV, wantS := make([]float32, n), make([]float32, n)
						for o := range d.Rows {
							for col := range d.Cols {
								wantV[o*d.Cols+col], wantS[o*d.Cols+col] = refGPTQ(c, d, parts, g.group, o, col)
							}
						}
						what := fmt.Sprintf("%s %s g_idx %v wild %v", c, sd, gidx, wild)
						withVector(func(vector bool) {
							v, s := make([]float32, n), make([]float32, n)
							if err := c.Decode(d, 0, d.Rows, parts, v); err != nil {
								t.Fatal(err)
							}
							sameBits(t, fmt.Sprintf("%s: Decode, vector %v", what, vector), v, wantV)
							if err := c.Steps(d, 0, d.Rows, parts, s); err != nil {
								t.Fatal(err)
							}
							sameBits(t, fmt.Sprintf("%s: Steps, vector %v", what, vector), s, wantS)
							for _, piece := range []uint64{5 * c.pack, d.Cols + c.pack, n} {
								for lo := uint64(0); lo < n; lo += piece {
									hi := min(lo+piece, n)
									if err := c.DecodeRange(d, 0, d.Rows, parts, lo, hi, v[:hi-lo], s[:hi-lo]); err != nil {
										t.Fatal(err)
									}
									sameBits(t, fmt.Sprintf("%s: values [%d, %d), vector %v", what, lo, hi, vector), v[:hi-lo], wantV[lo:hi])
									sameBits(t, fmt.Sprintf("%s: steps [%d, %d), vector %v", what, lo, hi, vector), s[:hi-lo], wantS[lo:hi])
								}
							}
						})
					}
				}
			}
		}
	}
}
