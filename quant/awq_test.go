package quant_test

import (
	"math/rand/v2"
	"testing"

	"github.com/ckptcheck/ckptcheck/quant"
	"github.com/ckptcheck/ckptcheck/quant/quanttest"
	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// awqPack packs 8 codes a word in AWQ_ORDER as WQLinear_GEMM.from_linear
// does: the code of column order_map[i] goes to nibble i.
func awqPack(codes []uint32) []uint32 {
	order := [8]int{0, 2, 4, 6, 1, 3, 5, 7}
	out := make([]uint32, len(codes)/8)
	for w := range out {
		for i, col := range order {
			out[w] |= codes[8*w+col] << (4 * i)
		}
	}
	return out
}

// TestAWQ: value = (q − z) · scale (AutoAWQ packing_utils.py dequantize_gemm
// at 7ee28736ab85f95724eeab2598bf49b13b86439f), stored in F16, for rows w·8+j
// of the [in, out/8] words.
func TestAWQ(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 20))
	for _, sd := range []tensorfile.DType{tensorfile.F16, tensorfile.BF16} {
		c, err := quant.NewAWQ(16, sd)
		if err != nil {
			t.Fatal(err)
		}
		var vectors []quanttest.Vector
		for _, dim := range [][2]int{{24, 48}, {8, 16}, {16, 32}} {
			out, in := dim[0], dim[1]
			groups := in / 16
			codes := make([][]uint32, in) // [in][out]
			var qw []uint32
			for col := range codes {
				codes[col] = make([]uint32, out)
				for o := range codes[col] {
					codes[col][o] = uint32(rng.IntN(16))
				}
				qw = append(qw, awqPack(codes[col])...)
			}
			zeros, scales := make([][]uint32, groups), make([][]float32, groups)
			var zw []uint32
			var sb []byte
			for g := range groups {
				zeros[g], scales[g] = make([]uint32, out), make([]float32, out)
				for o := range out {
					zeros[g][o] = uint32(rng.IntN(16))
					scales[g][o] = randScale(rng.Float32, sd)
					sb = append(sb, encodeAs(sd, scales[g][o])...)
				}
				zw = append(zw, awqPack(zeros[g])...)
			}
			want := make([]float32, out*in)
			for o := range out {
				for col := range in {
					g := col / 16
					want[o*in+col] = roundAs(sd, float32(int32(codes[col][o])-int32(zeros[g][o]))*scales[g][o])
				}
			}
			vectors = append(vectors, quanttest.Vector{Name: "random", Dims: quant.Dims{Rows: uint64(out), Cols: uint64(in)},
				Parts: [][]byte{u32le(qw), sb, u32le(zw)}, Want: want})
		}
		t.Run(c.String(), func(t *testing.T) { quanttest.TestCodec(t, c, vectors) })
	}
}
