package quant_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ckptcheck/ckptcheck/quant"
	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// intRTN is a test-side asymmetric round-to-nearest quantizer of groups of
// group columns of src [rows, cols] to bits: per (row, group) a scale
// (max − min)/(2^bits − 1) (widened by 1% so that its rounding to sd does
// not clamp the top) stored in sd, a zero round(−min/s), and codes
// clamp(round(x/s) + z).
type intRTN struct {
	codes, zeros []uint32  // [rows][cols], [rows][groups]
	scales       []float32 // [rows][groups]
	mins         []float32 // [rows][groups], the bias MLX stores
}

func quantizeRTN(src []float32, rows, cols, group, bits int, sd tensorfile.DType, mlx bool) intRTN {
	groups, top := cols/group, float64(int(1)<<bits-1)
	q := intRTN{make([]uint32, rows*cols), make([]uint32, rows*groups), make([]float32, rows*groups), make([]float32, rows*groups)}
	for r := range rows {
		for g := range groups {
			xs := src[r*cols+g*group : r*cols+(g+1)*group]
			lo, hi := float64(xs[0]), float64(xs[0])
			for _, x := range xs {
				lo, hi = math.Min(lo, float64(x)), math.Max(hi, float64(x))
			}
			s := roundAs(sd, float32((hi-lo)/top*1.01))
			k := r*groups + g
			q.scales[k], q.mins[k] = s, roundAs(sd, float32(lo))
			z := math.Round(-lo / float64(s))
			q.zeros[k] = uint32(z)
			for i, x := range xs {
				v := math.Round(float64(x)/float64(s)) + z
				if mlx {
					v = math.Round((float64(x) - float64(q.mins[k])) / float64(s))
				}
				q.codes[r*cols+g*group+i] = uint32(math.Max(0, math.Min(top, v)))
			}
		}
	}
	return q
}

func encodeAll(sd tensorfile.DType, vs []float32) []byte {
	var b []byte
	for _, v := range vs {
		b = append(b, encodeAs(sd, v)...)
	}
	return b
}

// transposed is m [rows][cols] as [cols][rows].
func transposed(m []uint32, rows, cols int) []uint32 {
	t := make([]uint32, len(m))
	for r := range rows {
		for c := range cols {
			t[c*rows+r] = m[r*cols+c]
		}
	}
	return t
}

// gptqWords packs codes [in][out] as qweight [in/pack, out] (codes of
// columns k·pack + j of a row at bit j·bits).
func gptqWords(codesT []uint32, in, out, bits int) []uint32 {
	pack := 32 / bits
	qw := make([]uint32, in/pack*out)
	for c := range in {
		for o := range out {
			qw[(c/pack)*out+o] |= codesT[c*out+o] << (bits * (c % pack))
		}
	}
	return qw
}

func TestIntAffineStepsBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const rows, cols, group = 16, 64, 32
	src := make([]float32, rows*cols)
	for i := range src {
		src[i] = float32(rng.NormFloat64())
	}
	for _, sd := range []tensorfile.DType{tensorfile.F16, tensorfile.BF16} {
		d := quant.Dims{Rows: rows, Cols: cols}
		t.Run("gptq "+sd.String(), func(t *testing.T) {
			q := quantizeRTN(src, rows, cols, group, 4, sd, false)
			c, _ := quant.NewGPTQ(quant.GPTQConfig{Bits: 4, GroupSize: group, Scale: sd, ZeroOffset: 1})
			zm1 := make([]uint32, len(q.zeros)) // v1 stores zero − 1
			for i, z := range q.zeros {
				zm1[i] = (z - 1) & 0xF
			}
			parts := [][]byte{u32le(gptqWords(transposed(q.codes, rows, cols), cols, rows, 4)),
				encodeAll(sd, f32T(q.scales, rows, cols/group)), u32le(packWords(transposed(zm1, rows, cols/group), 4))}
			checkWithinHalfStep(t, c, d, parts, src)
		})
		t.Run("awq "+sd.String(), func(t *testing.T) {
			q := quantizeRTN(src, rows, cols, group, 4, sd, false)
			c, _ := quant.NewAWQ(group, sd)
			parts := [][]byte{u32le(awqPack(transposed(q.codes, rows, cols))),
				encodeAll(sd, f32T(q.scales, rows, cols/group)), u32le(awqPack(transposed(q.zeros, rows, cols/group)))}
			checkWithinHalfStep(t, c, d, parts, src)
		})
		t.Run("pack-quantized "+sd.String(), func(t *testing.T) {
			q := quantizeRTN(src, rows, cols, group, 4, sd, false)
			c, _ := quant.NewPackQuantized(quant.PackQuantizedConfig{Bits: 4, GroupSize: group, Scale: sd, Asymmetric: true})
			// Zero points [rows/8, groups], packed along the rows.
			parts := [][]byte{u32le(packWords(q.codes, 4)), encodeAll(sd, q.scales),
				u32le(transposed(packWords(transposed(q.zeros, rows, cols/group), 4), cols/group, rows/8))}
			checkWithinHalfStep(t, c, d, parts, src)
		})
		t.Run("mlx "+sd.String(), func(t *testing.T) {
			q := quantizeRTN(src, rows, cols, group, 4, sd, true)
			c, _ := quant.NewMLXAffine(4, group, sd)
			parts := [][]byte{u32le(packWords(q.codes, 4)), encodeAll(sd, q.scales), encodeAll(sd, q.mins)}
			checkWithinHalfStep(t, c, d, parts, src)
		})
	}
}

// f32T is m [rows][cols] as [cols][rows].
func f32T(m []float32, rows, cols int) []float32 {
	t := make([]float32, len(m))
	for r := range rows {
		for c := range cols {
			t[c*rows+r] = m[r*cols+c]
		}
	}
	return t
}

func TestIntAffineSteps(t *testing.T) {
	// One row of 8 codes, scale 0.5 (F16 and BF16 exact), zero 8: value
	// (q − 8)·0.5, step 0.5 + 2u·|value| (u = 2^-11 in F16, 2^-8 in BF16).
	codes := []uint32{0, 8, 15, 1, 2, 3, 4, 5}
	gptq, _ := quant.NewGPTQ(quant.GPTQConfig{Bits: 4, GroupSize: 8, Scale: tensorfile.F16, ZeroOffset: 1})
	awq, _ := quant.NewAWQ(8, tensorfile.BF16)
	pq, _ := quant.NewPackQuantized(quant.PackQuantizedConfig{Bits: 4, GroupSize: 8, Scale: tensorfile.F32})
	mlx, _ := quant.NewMLXAffine(4, 8, tensorfile.BF16)
	rows8 := func(v []uint32) []uint32 { // 8 rows, row r's codes v: the [8, 8] codes for GPTQ/AWQ
		m := make([]uint32, 64)
		for r := range 8 {
			copy(m[r*8:], v)
		}
		return m
	}
	half := func(n int, d tensorfile.DType) []byte {
		return encodeAll(d, []float32{0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5}[:n])
	}
	tests := []struct {
		name  string
		c     quant.Codec
		d     quant.Dims
		parts [][]byte
		want  []float32 // of row 0
	}{
		{"gptq", gptq, quant.Dims{Rows: 8, Cols: 8}, [][]byte{u32le(gptqWords(transposed(rows8(codes), 8, 8), 8, 8, 4)), half(8, tensorfile.F16), u32le([]uint32{0x77777777})},
			[]float32{0.5 + 8.0/2048, 0.5, 0.5 + 7.0/2048, 0.5 + 7.0/2048}},
		{"awq", awq, quant.Dims{Rows: 8, Cols: 8}, [][]byte{u32le(awqPack(transposed(rows8(codes), 8, 8))), half(8, tensorfile.BF16), u32le([]uint32{0x88888888})},
			[]float32{0.5 + 8.0/256, 0.5, 0.5 + 7.0/256, 0.5 + 7.0/256}},
		// Symmetric: codes stored q + 8, the F32 product exact.
		{"pack-quantized", pq, quant.Dims{Rows: 1, Cols: 8}, [][]byte{u32le(packWords(codes, 4)), f32(-0.5)}, []float32{0.5, 0.5, 0.5, 0.5}},
		// MLX: 0.5·q − 4 in BF16: step 0.5 + 2u(|0.5·q| + |value|).
		{"mlx", mlx, quant.Dims{Rows: 1, Cols: 8}, [][]byte{u32le(packWords(codes, 4)), half(1, tensorfile.BF16), encodeAll(tensorfile.BF16, []float32{-4})},
			[]float32{0.5 + 2.0/256*4, 0.5 + 2.0/256*4, 0.5 + 2.0/256*(7.5+3.5), 0.5 + 2.0/256*(0.5+3.5)}},
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
