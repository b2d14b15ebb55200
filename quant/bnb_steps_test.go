package quant_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ckptcheck/ckptcheck/quant"
	"github.com/ckptcheck/ckptcheck/tensorfile"
)

func TestBNBSteps(t *testing.T) {
	nf4, _ := quant.NewBNB4(quant.BNB4Config{Blocksize: 64, DType: tensorfile.F32})
	data := make([]byte, 32)
	data[0], data[1] = 0x0F, 0x78 // nibbles 0 (−1), 15 (1), 7 (0), 8 (0.0796)
	inv127 := float32(7.874015718698502e-3)
	tests := []struct {
		name  string
		c     quant.Codec
		d     quant.Dims
		parts [][]byte
		want  []float32
	}{
		// absmax 2: the larger distance to a neighbouring NF4 value, times 2.
		{"nf4", nf4, quant.Dims{Rows: 1, Cols: 64}, [][]byte{data, f32(2)}, []float32{
			2 * (bnbNF4[1] - bnbNF4[0]), 2 * (bnbNF4[15] - bnbNF4[14]), 2 * max(bnbNF4[7]-bnbNF4[6], bnbNF4[8]-bnbNF4[7]), 2 * max(bnbNF4[8]-bnbNF4[7], bnbNF4[9]-bnbNF4[8])}},
		{"int8", quant.Int8Rowwise{}, quant.Dims{Rows: 2, Cols: 1}, [][]byte{{1, 0x81}, cat(f32(254), f32(-127))}, []float32{254 * inv127, 127 * inv127}},
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

// TestBNBStepsBound quantizes random sources as quantize_4bit (absmax a
// block, the nearest code of x/absmax, the first value in the high nibble)
// and LLM.int8 (round(x·127/SCB), SCB the row's absmax) do, and checks the
// decoded values within half a step of them.
func TestBNBStepsBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	d := quant.Dims{Rows: 6, Cols: 40}
	src := make([]float32, d.Rows*d.Cols)
	for i := range src {
		src[i] = float32(rng.NormFloat64())
	}
	absmax := func(xs []float32) float32 {
		m := float32(0)
		for _, x := range xs {
			m = max(m, float32(math.Abs(float64(x))))
		}
		return m
	}
	for _, q := range []quant.BNB4Config{{Blocksize: 64, DType: tensorfile.BF16}, {FP4: true, Blocksize: 64, DType: tensorfile.F16}} {
		c, _ := quant.NewBNB4(q)
		code := bnbNF4
		if q.FP4 {
			code = bnbFP4
		}
		t.Run(c.String(), func(t *testing.T) {
			data := make([]byte, len(src)/2)
			var ab []byte
			for b := 0; b < len(src); b += 64 {
				a := absmax(src[b:min(b+64, len(src))])
				ab = append(ab, f32(a)...)
				for i := b; i < min(b+64, len(src)); i++ {
					n := byte(nearest(src[i]/a, 16, func(k int) float32 { return code[k] }))
					data[i/2] |= n << (4 * (1 - i%2))
				}
			}
			checkWithinHalfStep(t, c, d, [][]byte{data, ab}, src)
		})
	}
	t.Run("int8", func(t *testing.T) {
		data := make([]byte, len(src))
		var scb []byte
		for r := range d.Rows {
			row := src[r*d.Cols : (r+1)*d.Cols]
			s := absmax(row)
			scb = append(scb, f32(s)...)
			for i, x := range row {
				data[r*d.Cols+uint64(i)] = byte(int8(math.Round(float64(x) * 127 / float64(s))))
			}
		}
		checkWithinHalfStep(t, quant.Int8Rowwise{}, d, [][]byte{data, scb}, src)
	})
}
