package quant_test

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/ckptcheck/ckptcheck/quant"
	"github.com/ckptcheck/ckptcheck/quant/quanttest"
	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// ggmlVectors reads the vectors testdata/ggml/gen.c wrote with ggml's own
// library: u32 rows, u32 cols, the blocks, then rows·cols float32.
func ggmlVectors(t *testing.T, c quant.Codec, file string) []quanttest.Vector {
	t.Helper()
	var vs []quanttest.Vector
	for _, kind := range []string{"quantized", "random"} {
		b, err := os.ReadFile(filepath.Join("testdata", "ggml", file+"_"+kind+".bin"))
		if err != nil {
			t.Fatal(err)
		}
		d := quant.Dims{Rows: uint64(binary.LittleEndian.Uint32(b)), Cols: uint64(binary.LittleEndian.Uint32(b[4:]))}
		sizes := make([]uint64, 1)
		if err := c.Sizes(d, sizes); err != nil {
			t.Fatal(err)
		}
		blocks := b[8 : 8+sizes[0]]
		rest := b[8+sizes[0]:]
		want := make([]float32, len(rest)/4)
		for i := range want {
			want[i] = math.Float32frombits(binary.LittleEndian.Uint32(rest[4*i:]))
		}
		vs = append(vs, quanttest.Vector{Name: kind, Dims: d, Parts: [][]byte{blocks}, Want: want})
	}
	return vs
}

func TestGGMLCodecs(t *testing.T) {
	files := map[tensorfile.Encoding]string{
		tensorfile.Q4_0: "q4_0", tensorfile.Q4_1: "q4_1", tensorfile.Q5_0: "q5_0", tensorfile.Q5_1: "q5_1",
		tensorfile.Q8_0: "q8_0", tensorfile.Q2_K: "q2_K", tensorfile.Q3_K: "q3_K", tensorfile.Q4_K: "q4_K",
		tensorfile.Q5_K: "q5_K", tensorfile.Q6_K: "q6_K", tensorfile.MXFP4: "mxfp4",
	}
	for e, file := range files {
		t.Run(e.String(), func(t *testing.T) {
			c, ok := quant.GGML(e)
			if !ok {
				t.Fatalf("no codec for %s", e)
			}
			if c.String() != "ggml:"+e.String() {
				t.Errorf("String = %q", c)
			}
			quanttest.TestCodec(t, c, ggmlVectors(t, c, file))
		})
	}
	for _, e := range []tensorfile.Encoding{tensorfile.Q8_K, tensorfile.IQ2_XXS, tensorfile.TQ1_0} {
		if _, ok := quant.GGML(e); ok {
			t.Errorf("%s has a codec", e)
		}
	}
}
