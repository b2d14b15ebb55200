package quant_test

import (
	"math/rand/v2"
	"testing"

	"github.com/ckptcheck/ckptcheck/quant"
	"github.com/ckptcheck/ckptcheck/quant/quanttest"
	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// packWords packs codes (each < 2^bits) pack to a word, the first in the
// low bits: AutoGPTQ's pack() (qweight[row] |= intweight[j] << (bits·(j −
// i))), compressed-tensors' pack_to_int32 and mlx's quantize alike.
func packWords(codes []uint32, bits int) []uint32 {
	pack := 32 / bits
	out := make([]uint32, (len(codes)+pack-1)/pack)
	for i, q := range codes {
		out[i/pack] |= q << (bits * (i % pack))
	}
	return out
}

// gptqVector quantizes nothing but lays random codes, zeros and scales out
// as AutoGPTQ's QuantLinear.pack does, and computes scales[g] · (q − (z+1))
// (v1) in float32 stored in the scale dtype, qlinear_cuda_old.py's forward
// at 179776bd1d97a2e7f84b72318630f43719647a11.
func gptqVector(rng *rand.Rand, out, in int, q quant.GPTQConfig, actOrder bool) quanttest.Vector {
	bits, pack := int(q.Bits), 32/int(q.Bits)
	group := int(q.GroupSize)
	if group == 0 {
		group = in
	}
	groups := (in + group - 1) / group
	gidx := make([]uint32, in)
	for c := range gidx {
		gidx[c] = uint32(c / group)
		if actOrder {
			gidx[c] = uint32(rng.IntN(groups))
		}
	}
	codes := make([][]uint32, in) // [in][out], as intweight before packing
	for c := range codes {
		codes[c] = make([]uint32, out)
		for o := range codes[c] {
			codes[c][o] = uint32(rng.IntN(1 << bits))
		}
	}
	scales := make([][]float32, groups)
	zeros := make([][]uint32, groups) // stored (zero − offset)
	var sb []byte
	var zw []uint32
	for g := range groups {
		scales[g], zeros[g] = make([]float32, out), make([]uint32, out)
		for o := range out {
			scales[g][o] = randScale(rng.Float32, q.Scale)
			sb = append(sb, encodeAs(q.Scale, scales[g][o])...)
			zeros[g][o] = uint32(rng.IntN(1 << bits))
		}
		zw = append(zw, packWords(zeros[g], bits)...)
	}
	var qw []uint32
	for k := 0; k < in/pack; k++ {
		row := make([]uint32, out)
		for o := range out {
			for j := range pack {
				row[o] |= codes[k*pack+j][o] << (bits * j)
			}
		}
		qw = append(qw, row...)
	}
	want := make([]float32, out*in)
	for o := range out {
		for c := range in {
			g := gidx[c]
			z := int32(zeros[g][o]) + q.ZeroOffset
			want[o*in+c] = roundAs(q.Scale, float32(int32(codes[c][o])-z)*scales[g][o])
		}
	}
	parts := [][]byte{u32le(qw), sb, u32le(zw)}
	if q.GIdx {
		parts = append(parts, u32le(gidx))
	}
	return quanttest.Vector{Name: "random", Dims: quant.Dims{Rows: uint64(out), Cols: uint64(in)}, Parts: parts, Want: want}
}

func TestGPTQ(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	for _, tt := range []struct {
		q        quant.GPTQConfig
		actOrder bool
	}{
		{quant.GPTQConfig{Bits: 4, GroupSize: 16, Scale: tensorfile.F16, ZeroOffset: 1, GIdx: true}, false},
		{quant.GPTQConfig{Bits: 4, GroupSize: 16, Scale: tensorfile.F16, ZeroOffset: 1, GIdx: true}, true},
		{quant.GPTQConfig{Bits: 4, GroupSize: 0, Scale: tensorfile.BF16, ZeroOffset: 0}, false},
		{quant.GPTQConfig{Bits: 8, GroupSize: 12, Scale: tensorfile.F16, ZeroOffset: 1}, false},
		{quant.GPTQConfig{Bits: 2, GroupSize: 32, Scale: tensorfile.F16, ZeroOffset: 1, GIdx: true}, true},
	} {
		c, err := quant.NewGPTQ(tt.q)
		if err != nil {
			t.Fatal(err)
		}
		pack := 32 / int(tt.q.Bits)
		vectors := []quanttest.Vector{gptqVector(rng, 3*pack, 48, tt.q, tt.actOrder), gptqVector(rng, pack, 96, tt.q, tt.actOrder),
			gptqVector(rng, 2*pack, 2*pack, tt.q, tt.actOrder)}
		t.Run(c.String(), func(t *testing.T) { quanttest.TestCodec(t, c, vectors) })
	}
	if _, err := quant.NewGPTQ(quant.GPTQConfig{Bits: 3, Scale: tensorfile.F16}); err == nil {
		t.Error("3-bit GPTQ: no error")
	}
}
