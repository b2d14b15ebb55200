package values

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ckptcheck/ckptcheck/quant"
	"github.com/ckptcheck/ckptcheck/safetensors"
	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// TestInterleavingSpans: bytes of an interleaved stream map to their way's
// bytes unit by unit, across the segments that hold the ways.
func TestInterleavingSpans(t *testing.T) {
	// Two ways of 3 units: way 0 units of 2 bytes at file 0 [0, 6), way 1
	// units of 4 bytes, split over file 1 [100, 105) and file 2 [0, 7).
	segs := []Segment{{File: 0, Offset: 0, Length: 6}, {File: 1, Offset: 100, Length: 5}, {File: 2, Offset: 0, Length: 7}}
	il, err := newInterleaving([]uint64{2, 4}, 18)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		off, n uint64
		want   []span
	}{
		{0, 18, []span{{0, 0, 2}, {1, 100, 4}, {0, 2, 2}, {1, 104, 1}, {2, 0, 3}, {0, 4, 2}, {2, 3, 4}}},
		{3, 4, []span{{1, 101, 3}, {0, 2, 1}}},
		{12, 1, []span{{0, 4, 1}}},
		{17, 1, []span{{2, 6, 1}}},
	} {
		var cum []uint64
		if got := il.spans(segs, &cum, nil, tt.off, tt.n); !slices.Equal(got, tt.want) {
			t.Errorf("bytes [%d, %d): %v, want %v", tt.off, tt.off+tt.n, got, tt.want)
		}
	}
	for _, tt := range []struct {
		units []uint64
		total uint64
	}{{[]uint64{2, 0}, 6}, {[]uint64{2, 4}, 17}, {[]uint64{^uint64(0), 2}, 6}, {nil, 6}} {
		if _, err := newInterleaving(tt.units, tt.total); err == nil {
			t.Errorf("interleave %v of %d bytes: no error", tt.units, tt.total)
		}
	}
}

// TestScheduleUnordered: spans that alternate between two regions of a
// file are read a region at a time and land in their order; spans that
// file order would not gather keep their own order.
func TestScheduleUnordered(t *testing.T) {
	data := make([]byte, 4096)
	for i := range data {
		data[i] = byte(i * 7)
	}
	var alternating, scattered []span
	var wantAlt, wantScat []byte
	for k := range int64(20) {
		for _, s := range []span{{0, 2 * k, 2}, {0, 1000 + 3*k, 3}} {
			alternating = append(alternating, s)
			wantAlt = append(wantAlt, data[s.off:s.off+s.n]...)
		}
		s := span{0, (k * 977) % 3900 / 200 * 200, 1} // far apart: no run gathers them
		scattered = append(scattered, s)
		wantScat = append(wantScat, data[s.off:s.off+s.n]...)
	}
	for _, tt := range []struct {
		name  string
		spans []span
		want  []byte
		reads int64
	}{{"alternating", alternating, wantAlt, 2}, {"scattered", scattered, wantScat, 20}} {
		src := &countingReader{Reader: bytes.NewReader(data)}
		j := &job{fills: [2]fill{{spans: tt.spans, size: len(tt.want)}, {}}}
		got := runJobs(t, []io.ReaderAt{src}, []*job{j}, schedulerOptions{workers: 1, readAhead: 1})
		if !bytes.Equal(got[0][0], tt.want) {
			t.Errorf("%s: filled %v, want %v", tt.name, got[0][0], tt.want)
		}
		if n := src.reads.Load(); n > tt.reads {
			t.Errorf("%s: %d reads, want at most %d", tt.name, n, tt.reads)
		}
	}
}

// interleaveRows is the rows of a and b, rows of row elements, taken in
// turn: gpt-oss's gate_up_proj from llama.cpp's ffn_gate_exps and
// ffn_up_exps.
func interleaveRows[T any](a, b []T, row int) []T {
	var out []T
	for i := 0; i < len(a); i += row {
		out = append(append(out, a[i:i+row]...), b[i:i+row]...)
	}
	return out
}

// transposeMatrices is the last two dimensions of x, matrices of rows ×
// cols, swapped.
func transposeMatrices(x []float32, rows, cols int) []float32 {
	out := make([]float32, 0, len(x))
	for m := 0; m < len(x); m += rows * cols {
		for c := range cols {
			for r := range rows {
				out = append(out, x[m+r*cols+c])
			}
		}
	}
	return out
}

// q8Rows is rows of Q8_0 blocks (32 values each) of random codes, and
// their values.
func q8Rows(rng *rand.Rand, rows, cols int) (data []byte, values []float32) {
	c, _ := quant.GGML(tensorfile.Q8_0)
	for range rows * cols / 32 {
		b := binary.LittleEndian.AppendUint16(nil, 0x2c00+uint16(rng.IntN(512))) // F16 scales near 2^-4
		for range 32 {
			b = append(b, byte(rng.IntN(256)))
		}
		data = append(data, b...)
	}
	values = make([]float32, rows*cols)
	d := quant.Dims{Rows: uint64(rows), Cols: uint64(cols)}
	if err := c.Decode(d, 0, d.Rows, [][]byte{data}, values); err != nil {
		panic(err)
	}
	return data, values
}

// TestInterleavedOperand: an operand whose segments hold two tensors and
// whose bytes are their rows taken in turn compares like the tensor those
// rows make, plain or block-quantized, read as it is or transposed, on
// every blocking; the two tensors the wrong way round do not.
func TestInterleavedOperand(t *testing.T) {
	const experts, rows, cols = 2, 6, 64 // each way [experts, rows, cols]
	rng := rand.New(rand.NewPCG(25, 1))
	random := func() []float32 {
		v := make([]float32, experts*rows*cols)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	gate, up := random(), random()
	gateQ, gateQV := q8Rows(rng, experts*rows, cols)
	upQ, upQV := q8Rows(rng, experts*rows, cols)
	q8, _ := quant.GGML(tensorfile.Q8_0)
	stored := []uint64{experts, 2 * rows, cols}
	transposed := []uint64{experts, cols, 2 * rows}
	var f fileBuilder
	type side struct {
		name  string
		op    func(first, second []Segment) Operand
		a, b  []Segment
		value func(first, second []float32) []float32 // the logical values
	}
	plainA, plainB := f.add(f32Of(gate)), f.add(f32Of(up))
	f.add(make([]byte, 100)) // the ways apart in the file
	qA, qB := f.add(gateQ), f.add(upQ)
	rowUnit := []uint64{cols * 4, cols * 4}
	qUnit := []uint64{cols / 32 * 34, cols / 32 * 34}
	sides := []side{
		{"F32", func(a, b []Segment) Operand {
			return Operand{DType: safetensors.F32, Shape: stored, Segments: slices.Concat(a, b), Interleave: rowUnit}
		}, plainA, plainB, func(a, b []float32) []float32 { return interleaveRows(a, b, cols) }},
		{"F32 transposed", func(a, b []Segment) Operand {
			return Operand{DType: safetensors.F32, Shape: transposed, Segments: slices.Concat(a, b), Interleave: rowUnit, Transposed: true}
		}, plainA, plainB, func(a, b []float32) []float32 { return transposeMatrices(interleaveRows(a, b, cols), 2*rows, cols) }},
		{"Q8_0", func(a, b []Segment) Operand {
			return Operand{Codec: q8, Shape: stored, Parts: [][]Segment{slices.Concat(a, b)}, Interleave: qUnit}
		}, qA, qB, func(a, b []float32) []float32 { return interleaveRows(a, b, cols) }},
		{"Q8_0 transposed", func(a, b []Segment) Operand {
			return Operand{Codec: q8, Shape: transposed, Parts: [][]Segment{slices.Concat(a, b)}, Interleave: qUnit, Transposed: true}
		}, qA, qB, func(a, b []float32) []float32 { return transposeMatrices(interleaveRows(a, b, cols), 2*rows, cols) }},
	}
	values := map[string][2][]float32{"F32": {gate, up}, "Q8_0": {gateQV, upQV}}
	for _, s := range sides {
		v := values[s.name[:3]]
		if s.name[0] == 'Q' {
			v = values["Q8_0"]
		}
		want := s.value(v[0], v[1])
		shape := stored
		if s.op(nil, nil).Transposed {
			shape = transposed
		}
		plain := Operand{DType: safetensors.F32, Shape: shape, Segments: f.add(f32Of(want))}
		for _, blocking := range []struct{ elems, tile uint64 }{{1 << 18, 8 << 20}, {64, 32 * 4 * 2 * rows}, {1, 1}} {
			name := fmt.Sprintf("%s, %d elements a block", s.name, blocking.elems)
			restore := SetBlocking(blocking.elems, blocking.tile)
			faithful := &Pair{Published: plain, Exported: s.op(s.a, s.b)}
			swapped := &Pair{Published: plain, Exported: s.op(s.b, s.a)}
			_, err := Run(context.Background(), []io.ReaderAt{bytes.NewReader(f.b)}, []*Pair{faithful, swapped}, Options{Workers: 2, ReadAhead: 2})
			restore()
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if st := faithful.Stats; !st.BitIdentical || st.Mismatches != 0 || st.MaxAbsDiff != 0 {
				t.Errorf("%s: %s, want equal", name, statsText(st))
			}
			if st := swapped.Stats; st.Mismatches == 0 {
				t.Errorf("%s: the ways swapped: %s, want mismatches", name, statsText(st))
			}
		}
	}
}
