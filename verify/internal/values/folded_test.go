package values

import (
	"bytes"
	"context"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ckptcheck/ckptcheck/safetensors"
)

// TestColumns: the per-column sums are the columns' own, over every row of
// every matrix, NaN pairs left out; many small blocks on several workers
// give the same sums, bit for bit, as one block.
func TestColumns(t *testing.T) {
	const mats, rows, cols = 2, 5, 3
	n := mats * rows * cols
	pv, ev := make([]float64, n), make([]float64, n)
	for i := range n {
		pv[i] = float64(i%7) - 2.5
		ev[i] = pv[i] * float64(1+i%cols) // column j scaled by j+1
	}
	ev[4] = math.NaN() // row 1, column 1 of the first matrix
	data := append(encode(safetensors.F32, pv), encode(safetensors.F32, ev)...)
	size := uint64(4 * n)
	shape := []uint64{mats, rows, cols}
	want := ColumnStats{PP: make([]float64, cols), EE: make([]float64, cols), PE: make([]float64, cols)}
	for i := range n {
		if math.IsNaN(ev[i]) {
			continue
		}
		j := i % cols
		want.PP[j] += pv[i] * pv[i]
		want.EE[j] += ev[i] * ev[i]
		want.PE[j] += pv[i] * ev[i]
	}
	run := func(workers int) *ColumnStats {
		p := &Pair{Name: "w", Columns: true,
			Published: Operand{DType: safetensors.F32, Shape: shape, Segments: []Segment{{Offset: 0, Length: size}}},
			Exported:  Operand{DType: safetensors.F32, Shape: shape, Segments: []Segment{{Offset: size, Length: size}}}}
		if _, err := Run(context.Background(), []io.ReaderAt{bytes.NewReader(data)}, []*Pair{p}, Options{Workers: workers}); err != nil {
			t.Fatal(err)
		}
		return p.Stats.Columns
	}
	whole := run(1)
	if whole == nil {
		t.Fatal("no column stats")
	}
	for j := range cols {
		for _, c := range [][2]float64{{whole.PP[j], want.PP[j]}, {whole.EE[j], want.EE[j]}, {whole.PE[j], want.PE[j]}} {
			if math.Abs(c[0]-c[1]) > 1e-9*max(1, math.Abs(c[1])) {
				t.Errorf("column %d: %v, want %v", j, whole, want)
			}
		}
	}
	restore := SetBlocking(4, 0)
	defer restore()
	for range 5 {
		small := run(4)
		if !slices.Equal(small.PP, whole.PP) || !slices.Equal(small.EE, whole.EE) || !slices.Equal(small.PE, whole.PE) {
			t.Fatalf("blocks of 4: %v, one block: %v", small, whole)
		}
	}
	// Not asked for: none.
	p := &Pair{Name: "w", Published: Operand{DType: safetensors.F32, Shape: shape, Segments: []Segment{{Offset: 0, Length: size}}},
		Exported: Operand{DType: safetensors.F32, Shape: shape, Segments: []Segment{{Offset: size, Length: size}}}}
	if _, err := Run(context.Background(), []io.ReaderAt{bytes.NewReader(data)}, []*Pair{p}, Options{}); err != nil || p.Stats.Columns != nil {
		t.Errorf("columns %v, err %v", p.Stats.Columns, err)
	}
}

// TestColumnLoop checks that addColumns's vector loop gives the Go loop's
// sums, bit for bit, over runs of every length with the values of
// sumsValue, a few rows added in turn.
func TestColumnLoop(t *testing.T) {
	for _, n := range []int{0, 1, 3, 4, 5, 8, 37, 1024, 1027} {
		var got [2][3][]float64
		for i, portable := range []bool{false, true} {
			rng := rand.New(rand.NewPCG(uint64(n), 9)) // the same values for both loops
			restore := UseKernels(portable)
			s := [3][]float64{make([]float64, n), make([]float64, n), make([]float64, n)}
			for range 3 {
				pv, ev := make([]float64, n), make([]float64, n)
				for j := range pv {
					pv[j], ev[j] = sumsValue(rng), sumsValue(rng)
				}
				addColumns(s[0], s[1], s[2], pv, ev)
			}
			restore()
			got[i] = s
		}
		for k := range 3 {
			for j := range n {
				if a, b := math.Float64bits(got[0][k][j]), math.Float64bits(got[1][k][j]); a != b {
					t.Errorf("n %d: sum %d of column %d: %x, the Go loop's %x", n, k, j, a, b)
				}
			}
		}
	}
}

// sumsValue is a float32 value, or by turns a NaN, an infinity, a zero of
// either sign, a subnormal or the largest float32 value.
func sumsValue(rng *rand.Rand) float64 {
	switch rng.IntN(24) {
	case 0:
		return math.NaN()
	case 1:
		return math.Inf(1 - 2*rng.IntN(2))
	case 2:
		return math.Copysign(0, -1)
	case 3:
		return float64(math.Float32frombits(uint32(rng.IntN(1 << 23)))) // subnormal
	case 4:
		return float64(math.MaxFloat32) * float64(1-2*rng.IntN(2))
	}
	return float64(float32(rng.NormFloat64()))
}
