package quant_test

import (
	"encoding/binary"
	"errors"
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

// TestGGMLColumnSpans: for every GGML type, the run ColumnSpans names for
// whole-block columns [c0, c1) of every row decodes (values and steps), as
// a weight of Dims{rows, c1 − c0}, to those columns of the whole weight;
// a band off the blocks is ErrRange. This is how a tensor stored as the
// transpose of its logical one (gpt-oss's ffn_down_exps) is read.
func TestGGMLColumnSpans(t *testing.T) {
	files := map[tensorfile.Encoding]string{
		tensorfile.Q4_0: "q4_0", tensorfile.Q4_1: "q4_1", tensorfile.Q5_0: "q5_0", tensorfile.Q5_1: "q5_1",
		tensorfile.Q8_0: "q8_0", tensorfile.Q2_K: "q2_K", tensorfile.Q3_K: "q3_K", tensorfile.Q4_K: "q4_K",
		tensorfile.Q5_K: "q5_K", tensorfile.Q6_K: "q6_K", tensorfile.MXFP4: "mxfp4",
	}
	type bander interface {
		ColumnSpans(d quant.Dims, c0, c1 uint64, dst []quant.Span) ([]quant.Span, error)
	}
	type stepper interface {
		Steps(d quant.Dims, r0, r1 uint64, parts [][]byte, dst []float32) error
	}
	for e, file := range files {
		t.Run(e.String(), func(t *testing.T) {
			c, _ := quant.GGML(e)
			cb, ok := c.(bander)
			if !ok {
				t.Fatalf("%s reads no band of columns", c)
			}
			v := ggmlVectors(t, c, file)[1] // random blocks
			d, blk := v.Dims, e.Block().Elements
			var wholeSteps []float32
			st, hasSteps := c.(stepper)
			if hasSteps {
				wholeSteps = make([]float32, d.Rows*d.Cols)
				if err := st.Steps(d, 0, d.Rows, v.Parts, wholeSteps); err != nil {
					t.Fatal(err)
				}
			}
			for _, band := range [][2]uint64{{0, d.Cols}, {0, blk}, {blk, d.Cols}, {d.Cols - blk, d.Cols}} {
				spans, err := cb.ColumnSpans(d, band[0], band[1], nil)
				if err != nil {
					t.Fatal(err)
				}
				var got []byte
				for _, s := range spans {
					for k := range s.Count {
						at := s.Offset + k*s.Stride
						got = append(got, v.Parts[0][at:at+s.Len]...)
					}
				}
				bd := quant.Dims{Rows: d.Rows, Cols: band[1] - band[0]}
				vals := make([]float32, bd.Rows*bd.Cols)
				if err := c.Decode(bd, 0, bd.Rows, [][]byte{got}, vals); err != nil {
					t.Fatal(err)
				}
				var steps []float32
				if hasSteps {
					steps = make([]float32, len(vals))
					if err := st.Steps(bd, 0, bd.Rows, [][]byte{got}, steps); err != nil {
						t.Fatal(err)
					}
				}
				for r := range bd.Rows {
					for k := range bd.Cols {
						i, w := r*bd.Cols+k, r*d.Cols+band[0]+k
						if math.Float32bits(vals[i]) != math.Float32bits(v.Want[w]) {
							t.Fatalf("columns %v: [%d, %d] = %v, want %v", band, r, k, vals[i], v.Want[w])
						}
						if hasSteps && math.Float32bits(steps[i]) != math.Float32bits(wholeSteps[w]) {
							t.Fatalf("columns %v: step [%d, %d] = %v, want %v", band, r, k, steps[i], wholeSteps[w])
						}
					}
				}
			}
			for _, band := range [][2]uint64{{1, blk + 1}, {blk, blk}, {0, d.Cols + blk}} {
				if _, err := cb.ColumnSpans(d, band[0], band[1], nil); !errors.Is(err, quant.ErrRange) {
					t.Errorf("columns %v: %v, want ErrRange", band, err)
				}
			}
		})
	}
}
