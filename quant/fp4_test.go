package quant_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ckptcheck/ckptcheck/quant"
	"github.com/ckptcheck/ckptcheck/quant/quanttest"
)

// e2m1 is the OCP FP4 value of a nibble from its definition: sign bit 3,
// exponent bits 2..1 (bias 1), mantissa bit 0; exponent 0 is subnormal
// (mantissa · 0.5).
func e2m1(n byte) float32 {
	exp, man := int(n>>1&3), float64(n&1)
	v := man * 0.5
	if exp > 0 {
		v = math.Ldexp(1+man/2, exp-1)
	}
	if n&8 != 0 {
		v = -v
	}
	return float32(v)
}

// packFP4 packs values (nibbles) two a byte, the first in the low nibble, as
// compressed-tensors' pack_fp4_to_uint8 and ModelOpt's quantize do
// (indices[:, 0] | indices[:, 1] << 4).
func packFP4(nibbles []byte) []byte {
	out := make([]byte, len(nibbles)/2)
	for i := range out {
		out[i] = nibbles[2*i] | nibbles[2*i+1]<<4
	}
	return out
}

func TestE2M1Spec(t *testing.T) {
	want := []float32{0, 0.5, 1, 1.5, 2, 3, 4, 6}
	for i, w := range want {
		if e2m1(byte(i)) != w || e2m1(byte(i)|8) != -w {
			t.Errorf("e2m1(%d) = %v, want ±%v", i, e2m1(byte(i)), w)
		}
	}
	if math.Float32bits(e2m1(8)) != 0x80000000 {
		t.Error("e2m1(8) is not -0")
	}
}

// TestMXFP4: value = FP4_VALUES[nibble] · 2^(e−127) (transformers
// integrations/mxfp4.py convert_moe_packed_tensors at
// 93a1c400417fd8e89db9f42f8b2265e97265d75a), 2^128 being +Inf.
func TestMXFP4(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	var vectors []quanttest.Vector
	for _, d := range []quant.Dims{{Rows: 5, Cols: 64}, {Rows: 1, Cols: 32}, {Rows: 3, Cols: 0}, {Rows: 8, Cols: 96}} {
		n := d.Rows * d.Cols
		nib := make([]byte, n)
		scales := make([]byte, n/32)
		want := make([]float32, n)
		for i := range scales {
			scales[i] = byte(110 + rng.UintN(30))
			if i == 1 {
				scales[i] = 255 // 2^128: ±Inf, and NaN for zeros
			}
			if i == 2 {
				scales[i] = 0 // 2^-127, subnormal
			}
		}
		for i := range nib {
			nib[i] = byte(rng.UintN(16))
			f := float32(math.Inf(1))
			if e := scales[i/32]; e != 255 {
				f = float32(math.Ldexp(1, int(e)-127))
			}
			want[i] = e2m1(nib[i]) * f
		}
		vectors = append(vectors, quanttest.Vector{Name: "random", Dims: d, Parts: [][]byte{packFP4(nib), scales}, Want: want})
	}
	quanttest.TestCodec(t, quant.MXFP4{}, vectors)
}

// TestMXFP4ColumnSpans: the bytes ColumnSpans names for columns [c0, c1)
// of every row decode, as a weight of Dims{rows, c1 − c0}, to those
// columns of the whole weight; a band off the 32-column blocks is
// ErrRange.
func TestMXFP4ColumnSpans(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	d := quant.Dims{Rows: 5, Cols: 128}
	parts := [][]byte{make([]byte, d.Rows*d.Cols/2), make([]byte, d.Rows*d.Cols/32)}
	for _, p := range parts {
		for i := range p {
			p[i] = byte(100 + rng.UintN(50))
		}
	}
	whole := make([]float32, d.Rows*d.Cols)
	if err := (quant.MXFP4{}).Decode(d, 0, d.Rows, parts, whole); err != nil {
		t.Fatal(err)
	}
	for _, band := range [][2]uint64{{0, 128}, {32, 64}, {64, 128}} {
		spans, err := (quant.MXFP4{}).ColumnSpans(d, band[0], band[1], nil)
		if err != nil {
			t.Fatal(err)
		}
		got := make([][]byte, 2)
		for _, s := range spans {
			for k := range s.Count {
				at := s.Offset + k*s.Stride
				got[s.Part] = append(got[s.Part], parts[s.Part][at:at+s.Len]...)
			}
		}
		w := band[1] - band[0]
		dst := make([]float32, d.Rows*w)
		if err := (quant.MXFP4{}).Decode(quant.Dims{Rows: d.Rows, Cols: w}, 0, d.Rows, got, dst); err != nil {
			t.Fatal(err)
		}
		for r := range d.Rows {
			for c := range w {
				if g, want := dst[r*w+c], whole[r*d.Cols+band[0]+c]; math.Float32bits(g) != math.Float32bits(want) {
					t.Fatalf("columns %v: [%d, %d] = %v, want %v", band, r, c, g, want)
				}
			}
		}
	}
	for _, band := range [][2]uint64{{16, 48}, {32, 32}, {96, 160}} {
		if _, err := (quant.MXFP4{}).ColumnSpans(d, band[0], band[1], nil); !errors.Is(err, quant.ErrRange) {
			t.Errorf("columns %v: %v, want ErrRange", band, err)
		}
	}
}

// TestNVFP4: ModelOpt multiplies by weight_scale_2 (value = e2m1 ·
// (float32(s) · s2)), compressed-tensors divides by weight_global_scale and
// stores BF16 (value = bf16(e2m1 · (float32(s) / g))).
func TestNVFP4(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, c := range []*quant.NVFP4{quant.NVFP4ModelOpt, quant.NVFP4CompressedTensors} {
		divide := c == quant.NVFP4CompressedTensors
		var vectors []quanttest.Vector
		for _, d := range []quant.Dims{{Rows: 7, Cols: 48}, {Rows: 1, Cols: 16}, {Rows: 2, Cols: 0}} {
			n := d.Rows * d.Cols
			nib, scales, want := make([]byte, n), make([]byte, n/16), make([]float32, n)
			g := rng.Float32()*100 + 1
			if !divide {
				g = 1 / g
			}
			for i := range scales {
				scales[i] = byte(rng.UintN(0x7E)) // positive, finite E4M3
			}
			for i := range nib {
				nib[i] = byte(rng.UintN(16))
				if divide {
					want[i] = bf16RNE(e2m1(nib[i]) * (e4m3(scales[i/16]) / g))
				} else {
					want[i] = e2m1(nib[i]) * (e4m3(scales[i/16]) * g)
				}
			}
			vectors = append(vectors, quanttest.Vector{Name: "random", Dims: d, Parts: [][]byte{packFP4(nib), scales, f32(g)}, Want: want})
		}
		t.Run(c.String(), func(t *testing.T) { quanttest.TestCodec(t, c, vectors) })
	}
}
