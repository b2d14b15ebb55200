package quant_test

import (
	"math/rand/v2"
	"testing"

	"github.com/ckptcheck/ckptcheck/quant"
	"github.com/ckptcheck/ckptcheck/quant/quanttest"
	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// TestChannelFP8: value = x_q.to(scale.dtype) * scale, stored in the
// scale's dtype (compressed-tensors forward.py _dequantize at
// 01dd1a58d39e47c617df54aaa4519a30273be0c5).
func TestChannelFP8(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, sd := range []tensorfile.DType{tensorfile.F32, tensorfile.BF16, tensorfile.F16} {
		for _, perTensor := range []bool{false, true} {
			c, err := quant.NewChannelFP8(sd, perTensor)
			if err != nil {
				t.Fatal(err)
			}
			var vectors []quanttest.Vector
			for _, d := range []quant.Dims{{Rows: 9, Cols: 13}, {Rows: 1, Cols: 1}, {Rows: 4, Cols: 0}, {Rows: 16, Cols: 16}} {
				nScales := d.Rows
				if perTensor {
					nScales = 1
				}
				var sb []byte
				scales := make([]float32, nScales)
				for i := range scales {
					scales[i] = randScale(rng.Float32, sd)
					sb = append(sb, encodeAs(sd, scales[i])...)
				}
				data := make([]byte, d.Rows*d.Cols)
				want := make([]float32, len(data))
				for i := range data {
					data[i] = byte(rng.UintN(256))
					s := scales[0]
					if !perTensor {
						s = scales[uint64(i)/d.Cols]
					}
					want[i] = roundAs(sd, e4m3(data[i])*s)
				}
				vectors = append(vectors, quanttest.Vector{Name: "random", Dims: d, Parts: [][]byte{data, sb}, Want: want})
			}
			t.Run(c.String(), func(t *testing.T) { quanttest.TestCodec(t, c, vectors) })
		}
	}
	if _, err := quant.NewChannelFP8(tensorfile.U8, false); err == nil {
		t.Error("U8 scales: no error")
	}
}
