package quant_test

import (
	"math/rand/v2"
	"testing"

	"github.com/ckptcheck/ckptcheck/quant"
	"github.com/ckptcheck/ckptcheck/quant/quanttest"
)

// blockFP8Vector quantizes nothing: it draws F8 bytes and one F32 scale a
// block (amax/448 of a random block, as DeepSeek-V3's act_quant derives
// them) and computes value = e4m3(b) · scale_inv[r/br][c/bc] in float32, the
// formula of weight_dequant_kernel (deepseek-ai/DeepSeek-V3
// inference/kernel.py; transformers integrations/finegrained_fp8.py at
// 3c48befbac8c4e11124f3bf1823d1407c6badc47).
func blockFP8Vector(rng *rand.Rand, rows, cols, br, bc uint64) quanttest.Vector {
	sr, sc := (rows+br-1)/br, (cols+bc-1)/bc
	data := make([]byte, rows*cols)
	scales := make([]float32, sr*sc)
	for i := range scales {
		scales[i] = rng.Float32() * 4 / 448
	}
	want := make([]float32, rows*cols)
	for r := range rows {
		for c := range cols {
			b := byte(rng.UintN(256))
			data[r*cols+c] = b
			want[r*cols+c] = e4m3(b) * scales[(r/br)*sc+c/bc]
		}
	}
	var sb []byte
	for _, s := range scales {
		sb = append(sb, f32(s)...)
	}
	return quanttest.Vector{Name: "ragged blocks", Dims: quant.Dims{Rows: rows, Cols: cols}, Parts: [][]byte{data, sb}, Want: want}
}

func TestBlockFP8(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, tt := range []struct{ br, bc uint64 }{{4, 3}, {128, 128}, {1, 1}} {
		c, err := quant.NewBlockFP8(tt.br, tt.bc)
		if err != nil {
			t.Fatal(err)
		}
		vectors := []quanttest.Vector{blockFP8Vector(rng, 10, 7, tt.br, tt.bc), blockFP8Vector(rng, 12, 6, tt.br, tt.bc), blockFP8Vector(rng, 1, 1, tt.br, tt.bc)}
		if tt.br == 128 {
			vectors = append(vectors, blockFP8Vector(rng, 257, 130, 128, 128))
		}
		t.Run(c.String(), func(t *testing.T) { quanttest.TestCodec(t, c, vectors) })
	}
	if _, err := quant.NewBlockFP8(0, 128); err == nil {
		t.Error("NewBlockFP8(0, 128): no error")
	}
}
