package values

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"math"
	"sync"
	"testing"

	"github.com/ckptcheck/ckptcheck/safetensors"
)

// TestProjectRows: a row check sees every row once, decoded, and the
// counts of elements that differ and of non-finite merged ones hold.
func TestProjectRows(t *testing.T) {
	const rows, cols = 5000, 7 // several blocks
	base, merged := make([]byte, 4*rows*cols), make([]byte, 4*rows*cols)
	for i := range rows * cols {
		binary.LittleEndian.PutUint32(base[4*i:], math.Float32bits(float32(i)))
		m := float32(i)
		switch i % 10 {
		case 3:
			m++
		case 4:
			m = float32(math.Inf(1))
		}
		binary.LittleEndian.PutUint32(merged[4*i:], math.Float32bits(m))
	}
	var mu sync.Mutex
	seen := map[uint64]bool{}
	ok := true
	p := &Projection{
		Base:   Operand{DType: safetensors.F32, Shape: []uint64{rows, cols}, Segments: []Segment{{File: 0, Length: uint64(len(base))}}},
		Merged: Operand{DType: safetensors.F32, Shape: []uint64{rows, cols}, Segments: []Segment{{File: 1, Length: uint64(len(merged))}}},
		Rows: func(row uint64, b, m []float64) {
			mu.Lock()
			defer mu.Unlock()
			if seen[row] || len(b) != cols || len(m) != cols || b[0] != float64(row*cols) {
				ok = false
			}
			seen[row] = true
		},
	}
	readers := []io.ReaderAt{bytes.NewReader(base), bytes.NewReader(merged)}
	if _, err := Project(context.Background(), readers, []*Projection{p}, Options{Workers: 2}); err != nil {
		t.Fatal(err)
	}
	if !ok || len(seen) != rows {
		t.Fatalf("rows seen %d of %d (ok %v)", len(seen), rows, ok)
	}
	if want := uint64(rows * cols / 10); p.Differs != 2*want || p.NonFinite != want {
		t.Fatalf("differs %d, non-finite %d; want %d, %d", p.Differs, p.NonFinite, 2*want, want)
	}
	p.Probes = [][]float64{make([]float64, cols)}
	if _, err := Project(context.Background(), readers, []*Projection{p}, Options{}); err == nil {
		t.Fatal("probes and a row check together: no error")
	}
}
