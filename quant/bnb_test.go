package quant_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ckptcheck/ckptcheck/quant"
	"github.com/ckptcheck/ckptcheck/quant/quanttest"
	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// TestInt8Rowwise: value = w · SCB[row] · 7.874015718698502e-3 in float32
// (bitsandbytes functional.py int8_vectorwise_dequant at
// 95f9af309d4d5793847169c39288dcd3fcbdf564), the reciprocal of 127 as a
// float32, not a division by 127.
func TestInt8Rowwise(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	inv := float32(1.0 / 127) // what torch rounds the Python scalar to
	var vectors []quanttest.Vector
	for _, d := range []quant.Dims{{Rows: 9, Cols: 17}, {Rows: 1, Cols: 1}, {Rows: 3, Cols: 0}} {
		data, scb := make([]byte, d.Rows*d.Cols), make([]float32, d.Rows)
		want := make([]float32, len(data))
		var sb []byte
		for r := range scb {
			scb[r] = rng.Float32() * 3
			sb = append(sb, f32(scb[r])...)
		}
		for i := range data {
			data[i] = byte(rng.UintN(256))
			p := float32(float32(int8(data[i])) * scb[uint64(i)/d.Cols])
			want[i] = p * inv
		}
		vectors = append(vectors, quanttest.Vector{Name: "random", Dims: d, Parts: [][]byte{data, sb}, Want: want})
	}
	quanttest.TestCodec(t, quant.Int8Rowwise{}, vectors)
	// Multiplying by the reciprocal is not dividing by 127: some value tells.
	differs := false
	for w := -127; w <= 127 && !differs; w++ {
		for _, s := range []float32{0.3, 1.7, 2.9, 0.01} {
			p := float32(w) * s
			differs = differs || p*inv != p/127
		}
	}
	if !differs {
		t.Error("no value tells w·s·(1/127) from w·s/127: the test proves nothing")
	}
}

// The 4-bit tables as bitsandbytes/functional.py get_4bit_type builds
// them: a list divided by its absolute maximum in float32.
var (
	bnbNF4 = []float32{-1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453, -0.28444138169288635,
		-0.18477343022823334, -0.09105003625154495, 0.0, 0.07958029955625534, 0.16093020141124725, 0.24611230194568634,
		0.33791524171829224, 0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0}
	bnbFP4 = func() []float32 {
		data := []float32{0, 0.0625, 8.0, 12.0, 4.0, 6.0, 2.0, 3.0, 0, -0.0625, -8.0, -12.0, -4.0, -6.0, -2.0, -3.0}
		data[8] = float32(math.Copysign(0, -1))
		twelve := float32(12)
		for i := range data {
			data[i] /= twelve
		}
		return data
	}()
)

// bnb4Vector builds a 4-bit weight of d as quantize_4bit lays it out
// (first value in the high nibble) with random nibbles and absmax, and the
// values dequantize_4bit's CUDA kernel computes.
func bnb4Vector(rng *rand.Rand, d quant.Dims, q quant.BNB4Config) quanttest.Vector {
	code := bnbNF4
	if q.FP4 {
		code = bnbFP4
	}
	n := d.Rows * d.Cols
	blocks := (n + q.Blocksize - 1) / q.Blocksize
	nib := make([]byte, n)
	data := make([]byte, (n+1)/2)
	for i := range nib {
		nib[i] = byte(rng.UintN(16))
		if i%2 == 0 {
			data[i/2] = nib[i] << 4
		} else {
			data[i/2] |= nib[i]
		}
	}
	absmax := make([]float32, blocks)
	var parts [][]byte
	if !q.Nested {
		var ab []byte
		for b := range absmax {
			absmax[b] = rng.Float32()*2 + 0.01
			ab = append(ab, f32(absmax[b])...)
		}
		parts = [][]byte{data, ab}
	} else {
		nb := (blocks + q.NestedBlocksize - 1) / q.NestedBlocksize
		qabs := make([]byte, blocks)
		nabs := make([]float32, nb)
		qmap := make([]float32, 256)
		for i := range qmap {
			qmap[i] = rng.Float32()*2 - 1
		}
		for i := range nabs {
			nabs[i] = rng.Float32()
		}
		var nab, qm []byte
		for b := range absmax {
			qabs[b] = byte(rng.UintN(256))
			p := float32(qmap[qabs[b]] * nabs[uint64(b)/q.NestedBlocksize]) // rounded before the offset: no fused multiply-add
			absmax[b] = p + q.NestedOffset
		}
		for _, v := range nabs {
			nab = append(nab, f32(v)...)
		}
		for _, v := range qmap {
			qm = append(qm, f32(v)...)
		}
		parts = [][]byte{data, qabs, nab, qm}
	}
	want := make([]float32, n)
	for i := range want {
		want[i] = roundAs(q.DType, code[nib[i]]*absmax[uint64(i)/q.Blocksize])
	}
	return quanttest.Vector{Name: "random", Dims: d, Parts: parts, Want: want}
}

func TestBNB4(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	for _, q := range []quant.BNB4Config{
		{Blocksize: 64, DType: tensorfile.BF16},
		{FP4: true, Blocksize: 64, DType: tensorfile.F16},
		{Blocksize: 32, DType: tensorfile.F32, Nested: true, NestedBlocksize: 4, NestedOffset: 0.125},
		{FP4: true, Blocksize: 64, DType: tensorfile.BF16, Nested: true, NestedBlocksize: 256, NestedOffset: 0.0371},
	} {
		c, err := quant.NewBNB4(q)
		if err != nil {
			t.Fatal(err)
		}
		var vectors []quanttest.Vector
		for _, d := range []quant.Dims{{Rows: 9, Cols: 64}, {Rows: 7, Cols: 13}, {Rows: 1, Cols: 1}, {Rows: 40, Cols: 33}} {
			vectors = append(vectors, bnb4Vector(rng, d, q))
		}
		t.Run(c.String(), func(t *testing.T) { quanttest.TestCodec(t, c, vectors) })
	}
	for _, q := range []quant.BNB4Config{{Blocksize: 48, DType: tensorfile.F32}, {Blocksize: 64, DType: tensorfile.U8},
		{Blocksize: 64, DType: tensorfile.F32, Nested: true}} {
		if _, err := quant.NewBNB4(q); err == nil {
			t.Errorf("NewBNB4(%+v): no error", q)
		}
	}
}
