package quant

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/x448/float16"

	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// checkRanges checks c's DecodeRange, with the vector loops and without,
// against the Go loops' Decode and Steps of the whole weight, bit for bit:
// in pieces of several sizes (whole tiles, the last one shorter), with
// and without steps, and Decode and Steps themselves with the vector
// loops.
func checkRanges(t *testing.T, c rangeCodec, d Dims, parts [][]byte) {
	t.Helper()
	n := d.Rows * d.Cols
	var wantVals, wantSteps []float32
	func() {
		defer func(old func() bool) { hasAVX2 = old }(hasAVX2)
		hasAVX2 = func() bool { return false }
		wantVals, wantSteps = make([]float32, n), make([]float32, n)
		if err := c.Decode(d, 0, d.Rows, parts, wantVals); err != nil {
			t.Fatal(err)
		}
		if err := c.Steps(d, 0, d.Rows, parts, wantSteps); err != nil {
			t.Fatal(err)
		}
	}()
	same := func(what string, got, want []float32) {
		t.Helper()
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%s %v: %s at %d: %#x (%g), want %#x (%g)", c, d, what, i, math.Float32bits(got[i]), got[i], math.Float32bits(want[i]), want[i])
			}
		}
	}
	vals, steps := make([]float32, n), make([]float32, n)
	if err := c.Decode(d, 0, d.Rows, parts, vals); err != nil {
		t.Fatal(err)
	}
	same("Decode", vals, wantVals)
	if err := c.Steps(d, 0, d.Rows, parts, steps); err != nil {
		t.Fatal(err)
	}
	same("Steps", steps, wantSteps)
	tc := max(c.Tile().Cols, 1)
	for _, vector := range []bool{true, false} {
		func() {
			defer func(old func() bool) { hasAVX2 = old }(hasAVX2)
			if !vector {
				hasAVX2 = func() bool { return false }
			}
			small := tc * max(1, 37/tc) // a few words, mid-word for tiles of a value
			for _, piece := range []uint64{small, 8 * tc, d.Cols + tc, n} {
				for lo := uint64(0); lo < n; lo += piece {
					hi := min(lo+piece, n)
					v, s := make([]float32, hi-lo), make([]float32, hi-lo)
					if err := c.DecodeRange(d, 0, d.Rows, parts, lo, hi, v, s); err != nil {
						t.Fatal(err)
					}
					same(fmt.Sprintf("values [%d, %d), vector %v", lo, hi, vector), v, wantVals[lo:hi])
					same(fmt.Sprintf("steps [%d, %d), vector %v", lo, hi, vector), s, wantSteps[lo:hi])
					if err := c.DecodeRange(d, 0, d.Rows, parts, lo, hi, v, nil); err != nil {
						t.Fatal(err)
					}
					same(fmt.Sprintf("values alone [%d, %d), vector %v", lo, hi, vector), v, wantVals[lo:hi])
				}
			}
		}()
	}
}

// randomParts makes random parts of a weight of d in c's encoding, its
// scales random values of their dtype (any bits when wild) and its g_idx,
// if any, a permutation of the column order of groups of group.
func randomParts(t *testing.T, c Codec, d Dims, rng *rand.Rand, wild bool, group uint64) [][]byte {
	t.Helper()
	sizes := make([]uint64, len(c.Parts()))
	if err := c.Sizes(d, sizes); err != nil {
		t.Fatal(err)
	}
	parts := make([][]byte, len(sizes))
	for i, p := range c.Parts() {
		parts[i] = make([]byte, sizes[i])
		for k := range parts[i] {
			parts[i][k] = byte(rng.Uint32())
		}
		switch {
		case p.Role == Index:
			cols := sizes[i] / 4
			perm := rng.Perm(int(cols))
			for col := range cols {
				binary.LittleEndian.PutUint32(parts[i][4*col:], uint32(uint64(perm[col])/group))
			}
		case (p.Role == Scale || p.Role == ZeroPoint && p.DType != tensorfile.I32 && p.DType != tensorfile.U32) && !wild:
			es := floatSize(p.DType)
			for k := uint64(0); k+es <= sizes[i]; k += es {
				v := float32(rng.NormFloat64() * 0.01)
				switch p.DType {
				case tensorfile.F16:
					binary.LittleEndian.PutUint16(parts[i][k:], float16.Fromfloat32(v).Bits())
				case tensorfile.BF16:
					binary.LittleEndian.PutUint16(parts[i][k:], uint16(math.Float32bits(v)>>16))
				case tensorfile.F32:
					binary.LittleEndian.PutUint32(parts[i][k:], math.Float32bits(v))
				}
			}
		}
	}
	return parts
}

// TestPackQuantizedRanges checks pack-quantized's ranges (checkRanges),
// and all of it against refPack (checkReference), for every width, group,
// symmetry, g_idx and scale dtype.
func TestPackQuantizedRanges(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	for _, bits := range []uint64{2, 4, 8} {
		for _, group := range []uint64{0, 16, 24, 128} {
			for _, asym := range []bool{false, true} {
				for _, gidx := range []bool{false, true} {
					for _, sd := range []tensorfile.DType{tensorfile.F16, tensorfile.BF16, tensorfile.F32} {
						c, err := NewPackQuantized(PackQuantizedConfig{Bits: bits, GroupSize: group, Scale: sd, Asymmetric: asym, GIdx: gidx})
						if err != nil {
							t.Fatal(err)
						}
						for _, d := range []Dims{{Rows: 8, Cols: 256}, {Rows: 16, Cols: 100}} {
							g, _ := c.geometry(d)
							parts := randomParts(t, c, d, rng, rng.IntN(3) == 0, g.group)
							if gidx && rng.IntN(2) == 0 { // column order
								for col := range d.Cols {
									binary.LittleEndian.PutUint32(parts[len(parts)-1][4*col:], uint32(col/g.group))
								}
							}
							checkRanges(t, c, d, parts)
							checkReference(t, c, d, parts, func(o, col uint64) (float32, float32) { return refPack(c, d, parts, o, col) })
						}
					}
				}
			}
		}
	}
}

// TestGPTQRanges checks GPTQ's ranges (checkRanges), and all of it against
// refGPTQ (checkReference), for every width, group, scale dtype and g_idx,
// normal and odd scales.
func TestGPTQRanges(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	for _, bits := range []uint64{2, 4, 8} {
		for _, group := range []uint64{0, 32, 64} {
			for _, sd := range []tensorfile.DType{tensorfile.F16, tensorfile.BF16} {
				for _, gidx := range []bool{false, true} {
					c, err := NewGPTQ(GPTQConfig{Bits: bits, GroupSize: group, Scale: sd, ZeroOffset: 1, GIdx: gidx})
					if err != nil {
						t.Fatal(err)
					}
					d := Dims{Rows: 16, Cols: 256}
					g, _ := c.geometry(d)
					for _, wild := range []bool{false, true} {
						parts := randomParts(t, c, d, rng, wild, g.group)
						if gidx && !wild { // column order
							for col := range d.Cols {
								binary.LittleEndian.PutUint32(parts[3][4*col:], uint32(col/g.group))
							}
						}
						checkRanges(t, c, d, parts)
						checkReference(t, c, d, parts, func(o, col uint64) (float32, float32) { return refGPTQ(c, d, parts, g.group, o, col) })
					}
				}
			}
		}
	}
}

// TestAWQRanges checks AWQ's ranges (checkRanges), and all of it against
// refAWQ (checkReference), for groups of whole and partial octets of
// columns, every scale dtype, normal and odd scales.
func TestAWQRanges(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for _, group := range []uint64{8, 12, 32, 128} {
		for _, sd := range []tensorfile.DType{tensorfile.F16, tensorfile.BF16, tensorfile.F32} {
			c, err := NewAWQ(group, sd)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range []Dims{{Rows: 24, Cols: 2 * group}, {Rows: 16, Cols: 256 / group * group}} {
				for _, wild := range []bool{false, true} {
					parts := randomParts(t, c, d, rng, wild, group)
					checkRanges(t, c, d, parts)
					checkReference(t, c, d, parts, func(o, col uint64) (float32, float32) { return refAWQ(c, d, parts, o, col) })
				}
			}
		}
	}
}

// TestMLXRanges checks MLX affine's ranges (checkRanges), and all of it
// against refMLX (checkReference), for every width, dtype and group,
// normal and odd scales and biases.
func TestMLXRanges(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	for _, bits := range []uint64{2, 4, 8} {
		for _, group := range []uint64{32, 64} {
			for _, sd := range []tensorfile.DType{tensorfile.F16, tensorfile.BF16, tensorfile.F32} {
				c, err := NewMLXAffine(bits, group, sd)
				if err != nil {
					t.Fatal(err)
				}
				d := Dims{Rows: 12, Cols: 4 * group}
				for _, wild := range []bool{false, true} {
					parts := randomParts(t, c, d, rng, wild, group)
					checkRanges(t, c, d, parts)
					checkReference(t, c, d, parts, func(o, col uint64) (float32, float32) { return refMLX(c, d, parts, o, col) })
				}
			}
		}
	}
}

// TestMLXFill16 checks the vector fill of an MLX 4-bit group's tables
// against the Go loops, bit for bit, on every F16 scale with biases around
// it, and BF16 scales of every exponent.
func TestMLXFill16(t *testing.T) {
	c, err := NewMLXAffine(4, 64, tensorfile.F16)
	if err != nil {
		t.Fatal(err)
	}
	check := func(s, b float32, sd tensorfile.DType) {
		var got, want affineLUTs
		c.fill(&got, s, b, sd, true)
		func() {
			defer func(old func() bool) { hasAVX2 = old }(hasAVX2)
			hasAVX2 = func() bool { return false }
			c.fill(&want, s, b, sd, true)
		}()
		for q := range 16 {
			if math.Float32bits(got.vals[q]) != math.Float32bits(want.vals[q]) || math.Float32bits(got.steps[q]) != math.Float32bits(want.steps[q]) {
				t.Fatalf("%s scale %#x, bias %#x, code %d: %#x, step %#x; want %#x, %#x", sd, math.Float32bits(s), math.Float32bits(b), q,
					math.Float32bits(got.vals[q]), math.Float32bits(got.steps[q]), math.Float32bits(want.vals[q]), math.Float32bits(want.steps[q]))
			}
		}
	}
	for h := range 1 << 16 {
		s := F16ToFloat32(uint16(h))
		for _, b := range []float32{0, -s * 7, s * 3.5, F16ToFloat32(uint16(h ^ 0x8400)), float32(math.Inf(-1))} {
			check(s, roundTo(tensorfile.F16, b), tensorfile.F16)
		}
		bs := math.Float32frombits(uint32(h) << 16)
		check(bs, math.Float32frombits(uint32(h^0x8200)<<16), tensorfile.BF16)
	}
}
