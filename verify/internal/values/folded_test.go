package values

import (
	"bytes"
	"context"
	"io"
	"math"
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
