package quant_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ckptcheck/ckptcheck/quant"
)

// e2m1Code is the E2M1 nibble nearest x.
func e2m1Code(x float32) byte {
	return byte(nearest(x, 16, func(n int) float32 { return e2m1(byte(n)) }))
}

func TestFP4Steps(t *testing.T) {
	// Nibbles 1 (0.5), 2 (1), 5 (3), 7 (6), 0xF (−6): spacings 0.5, 0.5, 1, 2, 2.
	nib := []byte{1, 2, 5, 7, 0xF}
	mx := make([]byte, 32)
	copy(mx, nib)
	nv := make([]byte, 16)
	copy(nv, nib)
	tests := []struct {
		name  string
		c     quant.Codec
		d     quant.Dims
		parts [][]byte
		want  []float32
	}{
		{"mxfp4", quant.MXFP4{}, quant.Dims{Rows: 1, Cols: 32}, [][]byte{packFP4(mx), {128}}, []float32{1, 1, 2, 4, 4}},
		// Block scale 0x38 (1) · scale_2 0.25.
		{"nvfp4 modelopt", quant.NVFP4ModelOpt, quant.Dims{Rows: 1, Cols: 16}, [][]byte{packFP4(nv), {0x38}, f32(0.25)}, []float32{0.125, 0.125, 0.25, 0.5, 0.5}},
		// Block scale 1 / global 4, values stored in BF16: widened by 2·2^-8·|value|.
		{"nvfp4 compressed", quant.NVFP4CompressedTensors, quant.Dims{Rows: 1, Cols: 16}, [][]byte{packFP4(nv), {0x38}, f32(4)},
			[]float32{0.125 + 0.25/256, 0.125 + 0.5/256, 0.25 + 1.5/256, 0.5 + 3.0/256, 0.5 + 3.0/256}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := stepsOf(t, tt.c, tt.d, tt.parts)
			for i, w := range tt.want {
				if got[i] != w {
					t.Errorf("step %d = %v, want %v", i, got[i], w)
				}
			}
		})
	}
}

// TestFP4StepsBound quantizes random sources as the exporters do — MXFP4:
// scale 2^⌈log2(amax/6)⌉ a block of 32; NVFP4: E4M3 block scale nearest
// amax/6 (over the global scale) a block of 16 — and checks the decoded
// values within half a step of them.
func TestFP4StepsBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	d := quant.Dims{Rows: 4, Cols: 64}
	src := make([]float32, d.Rows*d.Cols)
	for i := range src {
		src[i] = float32(rng.NormFloat64()) * 0.02
	}
	amax := func(xs []float32) float64 {
		m := 0.0
		for _, x := range xs {
			m = math.Max(m, math.Abs(float64(x)))
		}
		return m
	}
	t.Run("mxfp4", func(t *testing.T) {
		nib, scales := make([]byte, len(src)), make([]byte, len(src)/32)
		for k := range scales {
			e := int(math.Ceil(math.Log2(amax(src[32*k:32*k+32]) / 6)))
			scales[k] = byte(e + 127)
			for i := 32 * k; i < 32*k+32; i++ {
				nib[i] = e2m1Code(float32(math.Ldexp(float64(src[i]), -e)))
			}
		}
		checkWithinHalfStep(t, quant.MXFP4{}, d, [][]byte{packFP4(nib), scales}, src)
	})
	for _, c := range []*quant.NVFP4{quant.NVFP4ModelOpt, quant.NVFP4CompressedTensors} {
		t.Run(c.String(), func(t *testing.T) {
			g := float32(amax(src) / (6 * 448)) // ModelOpt's scale_2; compressed-tensors stores 1/g
			nib, scales := make([]byte, len(src)), make([]byte, len(src)/16)
			for k := range scales {
				scales[k] = e4m3Code(float32(amax(src[16*k:16*k+16]) / 6 / float64(g)))
				s := e4m3(scales[k]) * g
				if c == quant.NVFP4CompressedTensors {
					s = e4m3(scales[k]) / (1 / g)
				}
				for i := 16 * k; i < 16*k+16; i++ {
					nib[i] = e2m1Code(src[i] / s)
				}
			}
			gs := g
			if c == quant.NVFP4CompressedTensors {
				gs = 1 / g
			}
			checkWithinHalfStep(t, c, d, [][]byte{packFP4(nib), scales, f32(gs)}, src)
		})
	}
}
