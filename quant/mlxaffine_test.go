package quant_test

import (
	"math/rand/v2"
	"testing"

	"github.com/ckptcheck/ckptcheck/quant"
	"github.com/ckptcheck/ckptcheck/quant/quanttest"
	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// TestMLXAffine: value = round_T(round_T(scale · q) + bias), mlx's
// dequantize as two ops of dtype T (ml-explore/mlx mlx/ops.cpp at
// fc96f021d7fd3ac34ce25d74e8da07593ea72d3d), codes packed low bits first.
func TestMLXAffine(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	for _, tt := range []struct {
		bits, group uint64
		dt          tensorfile.DType
	}{{4, 32, tensorfile.BF16}, {8, 64, tensorfile.F16}, {2, 32, tensorfile.F32}, {4, 64, tensorfile.F16}} {
		c, err := quant.NewMLXAffine(tt.bits, tt.group, tt.dt)
		if err != nil {
			t.Fatal(err)
		}
		var vectors []quanttest.Vector
		for _, dim := range [][2]int{{5, 128}, {1, 64}, {3, 0}} {
			rows, cols := dim[0], dim[1]
			groups := cols / int(tt.group)
			codes := make([]uint32, rows*cols)
			for i := range codes {
				codes[i] = uint32(rng.IntN(1 << tt.bits))
			}
			scales, biases := make([]float32, rows*groups), make([]float32, rows*groups)
			var sb, bb []byte
			for i := range scales {
				scales[i] = randScale(rng.Float32, tt.dt)
				biases[i] = -randScale(rng.Float32, tt.dt) * 8
				sb, bb = append(sb, encodeAs(tt.dt, scales[i])...), append(bb, encodeAs(tt.dt, biases[i])...)
			}
			want := make([]float32, rows*cols)
			for i := range want {
				g := i / int(tt.group)
				p := roundAs(tt.dt, float32(float32(codes[i])*scales[g]))
				want[i] = roundAs(tt.dt, p+biases[g])
			}
			if rows*cols > 0 && biases[0] != roundAs(tt.dt, biases[0]) {
				t.Fatal("bias not representable")
			}
			vectors = append(vectors, quanttest.Vector{Name: "random", Dims: quant.Dims{Rows: uint64(rows), Cols: uint64(cols)},
				Parts: [][]byte{u32le(packWords(codes, int(tt.bits))), sb, bb}, Want: want})
		}
		t.Run(c.String(), func(t *testing.T) { quanttest.TestCodec(t, c, vectors) })
	}
}
