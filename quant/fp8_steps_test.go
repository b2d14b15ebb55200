package quant_test

import (
	"math/rand/v2"
	"testing"

	"github.com/ckptcheck/ckptcheck/quant"
	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// e4m3Code is the E4M3 byte nearest x.
func e4m3Code(x float32) byte {
	return byte(nearest(x, 256, func(b int) float32 { return e4m3(byte(b)) }))
}

func TestFP8Steps(t *testing.T) {
	block, _ := quant.NewBlockFP8(2, 2)
	bf16Row, _ := quant.NewChannelFP8(tensorfile.BF16, false)
	f32Tensor, _ := quant.NewChannelFP8(tensorfile.F32, true)
	tests := []struct {
		name  string
		c     quant.Codec
		d     quant.Dims
		parts [][]byte
		want  []float32
	}{
		// 0x38 = 1.0 (e 7: 2^-3), 0x01 the smallest subnormal (2^-9), 0x7E = 448 (e 15: 2^5).
		{"scaled", quant.ScaledFP8{}, quant.Dims{Rows: 1, Cols: 3}, [][]byte{{0x38, 0x01, 0xFE}, f32(-2)}, []float32{0.25, 1.0 / 256, 64}},
		// Blocks 2×2 of a 3×3: scales 1, 2 / 4, 8; the last row and column partial.
		{"block", block, quant.Dims{Rows: 3, Cols: 3}, [][]byte{{0x38, 0x38, 0x38, 0x38, 0x38, 0x38, 0x38, 0x38, 0x40}, cat(f32(1), f32(2), f32(4), f32(8))},
			[]float32{0.125, 0.125, 0.25, 0.125, 0.125, 0.25, 0.5, 0.5, 2}},
		// BF16 row scales 1 and 0.5: 1.0·1 = 1 stored in BF16, step 2^-3 + 2·2^-8·1.
		{"channel", bf16Row, quant.Dims{Rows: 2, Cols: 1}, [][]byte{{0x38, 0x38}, cat(encodeAs(tensorfile.BF16, 1), encodeAs(tensorfile.BF16, 0.5))},
			[]float32{0.125 + 2.0/256, 0.0625 + 1.0/256}},
		{"tensor", f32Tensor, quant.Dims{Rows: 2, Cols: 1}, [][]byte{{0x38, 0x30}, f32(4)}, []float32{0.5, 0.25}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := stepsOf(t, tt.c, tt.d, tt.parts)
			for i := range tt.want {
				if got[i] != tt.want[i] {
					t.Errorf("step %d = %v, want %v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

// TestFP8StepsBound quantizes random sources to nearest with amax/448
// scales and checks the decoded values within half a step of them.
func TestFP8StepsBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	d := quant.Dims{Rows: 5, Cols: 7}
	src := make([]float32, d.Rows*d.Cols)
	for i := range src {
		src[i] = float32(rng.NormFloat64())
	}
	quantize := func(scaleOf func(i int) float32) []byte {
		b := make([]byte, len(src))
		for i, x := range src {
			b[i] = e4m3Code(x / scaleOf(i))
		}
		return b
	}
	const s = 6.0 / 448 // amax of the draws (≤ 6) maps within 448
	t.Run("scaled", func(t *testing.T) {
		checkWithinHalfStep(t, quant.ScaledFP8{}, d, [][]byte{quantize(func(int) float32 { return s }), f32(s)}, src)
	})
	t.Run("block", func(t *testing.T) {
		c, _ := quant.NewBlockFP8(2, 3) // 3 × 3 blocks
		scales := []float32{s, 2 * s, s, s, s, 4 * s, s, s, 3 * s}
		data := quantize(func(i int) float32 { return scales[(uint64(i)/d.Cols/2)*3+uint64(i)%d.Cols/3] })
		var sb []byte
		for _, v := range scales {
			sb = append(sb, f32(v)...)
		}
		checkWithinHalfStep(t, c, d, [][]byte{data, sb}, src)
	})
	for _, sd := range []tensorfile.DType{tensorfile.F32, tensorfile.BF16, tensorfile.F16} {
		t.Run("channel "+sd.String(), func(t *testing.T) {
			c, _ := quant.NewChannelFP8(sd, false)
			var sb []byte
			scales := make([]float32, d.Rows)
			for r := range scales {
				scales[r] = roundAs(sd, s*float32(r+1))
				sb = append(sb, encodeAs(sd, scales[r])...)
			}
			checkWithinHalfStep(t, c, d, [][]byte{quantize(func(i int) float32 { return scales[uint64(i)/d.Cols] }), sb}, src)
		})
	}
}

func cat(b ...[]byte) []byte {
	var out []byte
	for _, p := range b {
		out = append(out, p...)
	}
	return out
}
