package values

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ckptcheck/ckptcheck/safetensors"
)

// TestRows: the per-row sums are the rows' own, every matrix's rows in
// order, the published side weighted per column and NaN pairs left out;
// blocks of 4 elements (which split rows) on several workers give the same
// sums, bit for bit, as one block; without weights, or with one too few,
// there are none.
func TestRows(t *testing.T) {
	const mats, rows, cols = 2, 5, 3
	n := mats * rows * cols
	pv, ev := make([]float64, n), make([]float64, n)
	w := []float64{0.5, 2, 4}
	for i := range n {
		pv[i] = float64(i%7) - 2.5
		ev[i] = float64(float32(pv[i] * w[i%cols] / float64(1+i/cols%rows))) // row i scaled by 1/(i+1), as F32 holds it
	}
	ev[4] = math.NaN()
	data := append(encode(safetensors.F32, pv), encode(safetensors.F32, ev)...)
	size := uint64(4 * n)
	shape := []uint64{mats, rows, cols}
	want := RowStats{PP: make([]float64, mats*rows), EE: make([]float64, mats*rows), PE: make([]float64, mats*rows)}
	for i := range n {
		if math.IsNaN(ev[i]) {
			continue
		}
		r, a := i/cols, pv[i]*w[i%cols]
		want.PP[r] += a * a
		want.EE[r] += ev[i] * ev[i]
		want.PE[r] += a * ev[i]
	}
	run := func(workers int, weights []float64) *RowStats {
		p := &Pair{Name: "w", Columns: true, RowWeights: weights,
			Published: Operand{DType: safetensors.F32, Shape: shape, Segments: []Segment{{Offset: 0, Length: size}}},
			Exported:  Operand{DType: safetensors.F32, Shape: shape, Segments: []Segment{{Offset: size, Length: size}}}}
		if _, err := Run(context.Background(), []io.ReaderAt{bytes.NewReader(data)}, []*Pair{p}, Options{Workers: workers}); err != nil {
			t.Fatal(err)
		}
		if p.Stats.Columns == nil {
			t.Fatal("no column stats")
		}
		return p.Stats.Rows
	}
	whole := run(1, w)
	if whole == nil || len(whole.PP) != mats*rows {
		t.Fatalf("rows %v", whole)
	}
	for r := range mats * rows {
		for _, c := range [][2]float64{{whole.PP[r], want.PP[r]}, {whole.EE[r], want.EE[r]}, {whole.PE[r], want.PE[r]}} {
			if math.Abs(c[0]-c[1]) > 1e-9*max(1, math.Abs(c[1])) {
				t.Errorf("row %d: %v, want %v", r, whole, want)
			}
		}
	}
	restore := SetBlocking(4, 0)
	defer restore()
	for range 5 {
		small := run(4, w)
		if !slices.Equal(small.PP, whole.PP) || !slices.Equal(small.EE, whole.EE) || !slices.Equal(small.PE, whole.PE) {
			t.Fatalf("blocks of 4: %v, one block: %v", small, whole)
		}
	}
	for _, weights := range [][]float64{nil, w[:2]} {
		if r := run(2, weights); r != nil {
			t.Errorf("weights %v: rows %v", weights, r)
		}
	}
}

// TestRowLoop checks that rowSums.addValues's vector loop gives the Go
// loop's sums, bit for bit: tensors of many column counts, a block that
// starts in a row, added whole or in pieces that split rows, with the
// values of sumsValue and weights that round the products (and one
// infinite weight, whose NaN sums are the one NaN of either loop).
func TestRowLoop(t *testing.T) {
	for _, cols := range []uint64{1, 3, 4, 5, 8, 37, 64} {
		for _, start := range []uint64{0, 2, cols + 1} {
			for _, pieces := range []int{1, 3} {
				n := 11*cols + 3
				var got [2]*rowSums
				for i, portable := range []bool{false, true} {
					rng := rand.New(rand.NewPCG(cols, start)) // the same values for both loops
					w := make([]float64, cols)
					for j := range w {
						w[j] = 1 + rng.Float64()
					}
					if cols > 4 {
						w[3] = math.Inf(1)
					}
					pv, ev := make([]float64, n), make([]float64, n)
					for j := range pv {
						pv[j], ev[j] = sumsValue(rng), sumsValue(rng)
					}
					restore := UseKernels(portable)
					r := newRowSums(start, n, cols)
					for k := range uint64(pieces) {
						lo, hi := n*k/uint64(pieces), n*(k+1)/uint64(pieces)
						r.addValues(w, start+lo, cols, pv[lo:hi], ev[lo:hi])
					}
					restore()
					got[i] = r
				}
				str := func(r *rowSums) string {
					return fmt.Sprintf("%x %x %x", bitsOf(r.pp), bitsOf(r.ee), bitsOf(r.pe))
				}
				if a, b := str(got[0]), str(got[1]); a != b {
					t.Errorf("cols %d, start %d, %d pieces:\nvector %s\nGo     %s", cols, start, pieces, a, b)
				}
			}
		}
	}
}

func bitsOf(v []float64) []uint64 {
	b := make([]uint64, len(v))
	for i, x := range v {
		b[i] = math.Float64bits(x)
	}
	return b
}
