package quant_test

import (
	"math/rand/v2"
	"testing"

	"github.com/ckptcheck/ckptcheck/quant"
	"github.com/ckptcheck/ckptcheck/quant/quanttest"
	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// TestPackQuantized lays codes out as compressed-tensors' pack_to_int32
// does (value + 2^(bits−1), padded rows; zero points packed along the rows)
// and expects (q − z) · scale rounded to the scale dtype (pack_quantized.py
// at 179cba93043885b3b7bcc3b1ecea0793b888ed67, forward.py _dequantize at
// 01dd1a58d39e47c617df54aaa4519a30273be0c5).
func TestPackQuantized(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for _, q := range []quant.PackQuantizedConfig{
		{Bits: 4, GroupSize: 8, Scale: tensorfile.BF16},
		{Bits: 4, GroupSize: 8, Scale: tensorfile.F16, Asymmetric: true},
		{Bits: 8, GroupSize: 0, Scale: tensorfile.F32},
		{Bits: 4, GroupSize: 4, Scale: tensorfile.BF16, Asymmetric: true, GIdx: true},
	} {
		c, err := quant.NewPackQuantized(q)
		if err != nil {
			t.Fatal(err)
		}
		var vectors []quanttest.Vector
		for _, dim := range [][2]int{{11, 20}, {1, 8}, {16, 13}, {9, 3}} {
			vectors = append(vectors, packQuantizedVector(rng, dim[0], dim[1], q))
		}
		t.Run(c.String(), func(t *testing.T) { quanttest.TestCodec(t, c, vectors) })
	}
}

func packQuantizedVector(rng *rand.Rand, rows, cols int, q quant.PackQuantizedConfig) quanttest.Vector {
	bits := int(q.Bits)
	pack, half := 32/bits, int32(1)<<(bits-1)
	group := int(q.GroupSize)
	if group == 0 || group > cols {
		group = cols
	}
	groups := (cols + group - 1) / group
	gidx := make([]uint32, cols)
	for col := range gidx {
		gidx[col] = uint32(col / group)
		if q.GIdx {
			gidx[col] = uint32(rng.IntN(groups))
		}
	}
	codes := make([]uint32, 0, rows*cols)
	var packed []uint32
	for range rows {
		row := make([]uint32, cols)
		for col := range row {
			row[col] = uint32(rng.IntN(1 << bits))
		}
		codes = append(codes, row...)
		packed = append(packed, packWords(row, bits)...) // the last word padded with zero codes
	}
	scales := make([]float32, rows*groups)
	var sb []byte
	for i := range scales {
		scales[i] = randScale(rng.Float32, q.Scale)
		sb = append(sb, encodeAs(q.Scale, scales[i])...)
	}
	zeros := make([]uint32, rows*groups) // stored (offset) codes
	for i := range zeros {
		zeros[i] = uint32(half)
		if q.Asymmetric {
			zeros[i] = uint32(rng.IntN(1 << bits))
		}
	}
	want := make([]float32, rows*cols)
	for r := range rows {
		for col := range cols {
			g := int(gidx[col])
			qv, z := int32(codes[r*cols+col])-half, int32(zeros[r*groups+g])-half
			want[r*cols+col] = roundAs(q.Scale, float32(qv-z)*scales[r*groups+g])
		}
	}
	parts := [][]byte{u32le(packed), sb}
	if q.Asymmetric {
		var zw []uint32 // [⌈rows/pack⌉, groups]: transpose, pack the rows, transpose back
		for k := 0; k < (rows+pack-1)/pack; k++ {
			for g := range groups {
				var w uint32
				for j := 0; j < pack && k*pack+j < rows; j++ {
					w |= zeros[(k*pack+j)*groups+g] << (bits * j)
				}
				zw = append(zw, w)
			}
		}
		parts = append(parts, u32le(zw))
	}
	if q.GIdx {
		parts = append(parts, u32le(gidx))
	}
	return quanttest.Vector{Name: "random", Dims: quant.Dims{Rows: uint64(rows), Cols: uint64(cols)}, Parts: parts, Want: want}
}
