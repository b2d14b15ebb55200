package ggufwrite

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/ckptcheck/ckptcheck/quant"
	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// TestQuantizersMatchGGML quantizes the inputs of quant/testdata/ggml/gen.c
// and compares the blocks with the ones ggml's own library wrote there, byte
// for byte. gen.c draws from one stream for all types in turn, so the test
// replays the types before each.
func TestQuantizersMatchGGML(t *testing.T) {
	inputs := ggmlInputs(t)
	for _, k := range genKinds {
		src := inputs[k.name]
		if k.quantize == nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("..", "..", "quant", "testdata", "ggml", k.name+"_quantized.bin"))
		if err != nil {
			t.Fatal(err)
		}
		got := k.quantize(nil, src)
		if len(got) == 0 || len(b) < 8+len(got) {
			t.Fatalf("%s: %d bytes quantized, %d in ggml's file", k.name, len(got), len(b))
		}
		want := b[8 : 8+len(got)]
		if !bytes.Equal(got, want) {
			n := 0
			for i := range got {
				if got[i] != want[i] {
					n++
				}
			}
			t.Errorf("%s: %d of %d bytes differ from ggml's", k.name, n, len(got))
		}
	}
}

// A genKind is a type gen.c wrote vectors of, in its order.
type genKind struct {
	name       string
	rows, cols int
	quantize   func([]byte, []float32) []byte // nil: not ported
	block      int
}

var genKinds = []genKind{
	{"q4_0", 3, 96, nil, 32}, {"q4_1", 3, 96, nil, 32}, {"q5_0", 3, 96, nil, 32}, {"q5_1", 3, 96, nil, 32},
	{"q8_0", 3, 96, AppendQ8_0, Q8_0Values},
	{"q2_K", 2, 512, nil, 256}, {"q3_K", 2, 512, nil, 256},
	{"q4_K", 2, 512, AppendQ4K, Q4KValues},
	{"q5_K", 2, 512, nil, 256}, {"q6_K", 2, 512, nil, 256}, {"mxfp4", 3, 96, nil, 32},
}

// ggmlInputs are gen.c's inputs of each type.
func ggmlInputs(t *testing.T) map[string][]float32 {
	rng := newGenStream()
	out := map[string][]float32{}
	for _, k := range genKinds {
		out[k.name] = rng.inputs(k.rows, k.cols, k.block)
		rng.skipRandom(t, k.name)
	}
	return out
}

// genStream replays gen.c's random stream across its types.
type genStream struct{ s uint64 }

func newGenStream() *genStream { return &genStream{0x9E3779B97F4A7C15} }

func (g *genStream) next() uint32 {
	g.s ^= g.s >> 12
	g.s ^= g.s << 25
	g.s ^= g.s >> 27
	return uint32((g.s * 0x2545F4914F6CDD1D) >> 32)
}

func (g *genStream) inputs(rows, cols, block int) []float32 {
	src := make([]float32, rows*cols)
	for i := range src {
		scale := float32(300)
		switch i / cols {
		case 0:
			scale = 0.02
		case 1:
			scale = 1.5
		}
		src[i] = (float32(g.next()>>8)/16777216*2 - 1) * scale
		if g.next()%97 == 0 {
			src[i] *= 8
		}
	}
	for i := range block {
		src[i] = 0
	}
	return src
}

// skipRandom draws the random block bytes gen.c writes after each type's
// quantized vector (their count is the random file's).
func (g *genStream) skipRandom(t *testing.T, name string) {
	b, err := os.ReadFile(filepath.Join("..", "..", "quant", "testdata", "ggml", name+"_random.bin"))
	if err != nil {
		t.Fatal(err)
	}
	rows, cols := binary.LittleEndian.Uint32(b), binary.LittleEndian.Uint32(b[4:])
	for range len(b) - 8 - int(rows*cols)*4 {
		g.next()
	}
}

// TestStepsBoundGGML checks quant's GGML steps against ggml's own
// quantization of gen.c's inputs: for the round-to-nearest types every
// input lies within (1+1/16) half steps of its decoded value (the margin
// values.StepMargin allows), and for the K-quants, which refit scales after
// rounding, the error's RMS is within the RMS of the steps.
func TestStepsBoundGGML(t *testing.T) {
	inputs := ggmlInputs(t)
	encodings := map[string]tensorfile.Encoding{"q4_0": tensorfile.Q4_0, "q4_1": tensorfile.Q4_1, "q5_0": tensorfile.Q5_0,
		"q5_1": tensorfile.Q5_1, "q8_0": tensorfile.Q8_0, "q2_K": tensorfile.Q2_K, "q3_K": tensorfile.Q3_K,
		"q4_K": tensorfile.Q4_K, "q5_K": tensorfile.Q5_K, "q6_K": tensorfile.Q6_K, "mxfp4": tensorfile.MXFP4}
	for _, k := range genKinds {
		t.Run(k.name, func(t *testing.T) {
			c, _ := quant.GGML(encodings[k.name])
			st, ok := c.(interface {
				Steps(quant.Dims, uint64, uint64, [][]byte, []float32) error
				ErrorCompensated() bool
			})
			if !ok {
				t.Fatalf("%s: no steps", c)
			}
			b, err := os.ReadFile(filepath.Join("..", "..", "quant", "testdata", "ggml", k.name+"_quantized.bin"))
			if err != nil {
				t.Fatal(err)
			}
			d := quant.Dims{Rows: uint64(k.rows), Cols: uint64(k.cols)}
			n := k.rows * k.cols
			blocks := b[8 : len(b)-4*n]
			vals, steps := make([]float32, n), make([]float32, n)
			if err := c.Decode(d, 0, d.Rows, [][]byte{blocks}, vals); err != nil {
				t.Fatal(err)
			}
			if err := st.Steps(d, 0, d.Rows, [][]byte{blocks}, steps); err != nil {
				t.Fatal(err)
			}
			var e2, s2 float64
			outside := 0
			for i, x := range inputs[k.name] {
				diff := math.Abs(float64(x) - float64(vals[i]))
				e2 += diff * diff
				s2 += float64(steps[i]) * float64(steps[i]) / 12
				if diff > (1+1.0/16)*float64(steps[i])/2 {
					outside++
				}
			}
			if st.ErrorCompensated() {
				if e2 > 4*s2 {
					t.Errorf("error RMS %.3g, steps imply %.3g", math.Sqrt(e2/float64(n)), math.Sqrt(s2/float64(n)))
				}
			} else if outside > 0 {
				t.Errorf("%d of %d values beyond half a step", outside, n)
			}
		})
	}
}
