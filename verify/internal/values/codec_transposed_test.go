package values

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ckptcheck/ckptcheck/quant"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// mxfp4Experts is an expert stack of logical shape [e, rows, cols] stored
// as gpt-oss does, each expert transposed: blocks [e, cols, rows/32, 16],
// scales [e, cols, rows/32]; with the values and steps it means, in
// logical order.
type mxfp4Experts struct {
	shape          []uint64
	blocks, scales []byte
	values, steps  []float32
}

func newMXFP4Experts(t *testing.T, e, rows, cols uint64, seed uint64) mxfp4Experts {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 2))
	x := mxfp4Experts{shape: []uint64{e, rows, cols}, blocks: make([]byte, e*rows*cols/2), scales: make([]byte, e*rows*cols/32)}
	for i := range x.blocks {
		x.blocks[i] = byte(rng.IntN(256))
	}
	for i := range x.scales {
		x.scales[i] = byte(120 + rng.IntN(14))
	}
	stored := quant.Dims{Rows: cols, Cols: rows}
	per := rows * cols
	vals, steps := make([]float32, per), make([]float32, per)
	for m := range e {
		parts := [][]byte{x.blocks[m*per/2 : (m+1)*per/2], x.scales[m*per/32 : (m+1)*per/32]}
		if err := (quant.MXFP4{}).Decode(stored, 0, cols, parts, vals); err != nil {
			t.Fatal(err)
		}
		if err := (quant.MXFP4{}).Steps(stored, 0, cols, parts, steps); err != nil {
			t.Fatal(err)
		}
		for r := range rows {
			for c := range cols {
				x.values = append(x.values, vals[c*rows+r])
				x.steps = append(x.steps, steps[c*rows+r])
			}
		}
	}
	return x
}

// TestTransposedCodecOperand: MXFP4 experts stored transposed compare, on
// every blocking and worker count, exactly like the F32 tensor they
// decode to, coordinates in logical order, and their steps are measured
// in that order too; blocks are bands no wider than a tile allows.
func TestTransposedCodecOperand(t *testing.T) {
	const e, rows, cols = 3, 96, 40
	x := newMXFP4Experts(t, e, rows, cols, 1)
	decoded := f32Of(x.values)
	// The published side: the decoded values, off by a quarter step
	// everywhere, and one element far off at [2 65 7].
	pub := make([]float32, len(x.values))
	for i, v := range x.values {
		pub[i] = v + x.steps[i]/4
	}
	far := (2*rows+65)*cols + 7
	pub[far] = 1e6
	var f fileBuilder
	q := Operand{Shape: x.shape, Codec: quant.MXFP4{}, Transposed: true, Parts: [][]Segment{f.add(x.blocks), f.add(x.scales)}}
	dec := Operand{DType: safetensors.F32, Shape: x.shape, Segments: f.add(decoded)}
	off := Operand{DType: safetensors.F32, Shape: x.shape, Segments: f.add(f32Of(pub))}
	readers := []io.ReaderAt{bytes.NewReader(f.b)}

	var sumStep2, sumP2 float64
	for i, s := range x.steps {
		if i != far {
			sumStep2 += float64(s) * float64(s)
			sumP2 += float64(pub[i]) * float64(pub[i])
		}
	}
	sumP2 += 1e12
	sumStep2 += float64(x.steps[far]) * float64(x.steps[far])
	wantNoise := math.Sqrt(sumStep2/12) / math.Sqrt(sumP2)

	for _, blocking := range []struct{ elems, tile uint64 }{{1 << 18, 8 << 20}, {64, 32 * cols * 4}, {64, 64 * cols * 4}, {1, 1}} {
		for _, workers := range []int{1, 3} {
			name := fmt.Sprintf("%d elements, tile %d, %d workers", blocking.elems, blocking.tile, workers)
			restore := SetBlocking(blocking.elems, blocking.tile)
			exact := &Pair{Published: dec, Exported: q}
			reference := &Pair{Published: off, Exported: dec}
			measured := &Pair{Published: off, Exported: q}
			_, err := Run(context.Background(), readers, []*Pair{exact, reference, measured}, Options{Workers: workers, ReadAhead: 2})
			restore()
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if s := exact.Stats; !s.BitIdentical || s.Mismatches != 0 || s.MaxAbsDiff != 0 || s.Steps == nil || s.Steps.Outside != 0 || s.Steps.MaxRatio != 0 {
				t.Errorf("%s: against its decoded values: %s", name, statsText(s))
			}
			if g, w := measured.Stats, reference.Stats; !sameStats(g, w) || fmt.Sprint(g.MaxAt) != "[2 65 7]" {
				t.Errorf("%s: against the published values\n got %s\nwant %s", name, statsText(g), statsText(w))
			}
			st := measured.Stats.Steps
			if st == nil || st.Outside != 1 || fmt.Sprint(st.MaxAt) != "[2 65 7]" || math.Abs(st.NoiseRelL2-wantNoise) > 1e-9*wantNoise {
				t.Errorf("%s: steps %+v, want one outside at [2 65 7], noise %g", name, st, wantNoise)
			}
			if b := measured.blocks; b.perRows%32 != 0 && b.perRows != rows || b.perRows*cols*4 > max(blocking.tile, 32*cols*4, blocking.elems*4) {
				t.Errorf("%s: bands of %d rows", name, b.perRows)
			}
		}
	}
}

// TestTransposedCodecBands: a band of logical rows reads the band's
// columns of every stored row, and nothing else.
func TestTransposedCodecBands(t *testing.T) {
	o := Operand{Shape: []uint64{2, 64, 3}, Codec: quant.MXFP4{}, Transposed: true,
		Parts: [][]Segment{{{File: 0, Offset: 100, Length: 2 * 64 * 3 / 2}}, {{File: 1, Offset: 0, Length: 2 * 64 * 3 / 32}}}}
	if err := o.prepareCodec(); err != nil {
		t.Fatal(err)
	}
	f, err := o.codecFill(1, 32, 64)
	if err != nil {
		t.Fatal(err)
	}
	// Matrix 1 starts 96 block bytes and 6 scale bytes in; each stored row
	// holds 32 block bytes and 2 scales, the band the second half.
	want := []span{{0, 100 + 96 + 16, 16}, {0, 100 + 96 + 48, 16}, {0, 100 + 96 + 80, 16}, {1, 6 + 1, 1}, {1, 6 + 3, 1}, {1, 6 + 5, 1}}
	if fmt.Sprint(f.spans) != fmt.Sprint(want) || fmt.Sprint(f.parts) != "[48 3]" || f.size != 51 || f.transpose != nil {
		t.Errorf("fill %+v, want spans %v", f, want)
	}
	if _, err := o.codecFill(0, 16, 48); err == nil {
		t.Error("a band not aligned to 32 rows: no error")
	}
}

// TestTransposedCodecErrors: a transposed codec side that is no matrix is
// an error before anything is read.
func TestTransposedCodecErrors(t *testing.T) {
	x := newMXFP4Experts(t, 1, 32, 2, 3)
	var f fileBuilder
	q := Operand{Shape: x.shape, Codec: quant.MXFP4{}, Transposed: true, Parts: [][]Segment{f.add(x.blocks), f.add(x.scales)}}
	dec := Operand{DType: safetensors.F32, Shape: x.shape, Segments: f.add(f32Of(x.values))}
	flat := q
	flat.Shape = []uint64{64}
	flat.Transposed = true
	readers := []io.ReaderAt{bytes.NewReader(f.b)}
	p := &Pair{Published: dec, Exported: flat}
	if _, err := Run(context.Background(), readers, []*Pair{p}, Options{}); err == nil {
		t.Error("a transposed 1-D codec side: no error")
	}
}

// BenchmarkRunTransposedMXFP4 times a Run of one gpt-oss-sized expert
// ([1, 2880, 5760] logical, stored transposed) against the F32 values it
// decodes to, one worker, bytes in memory; beside it, the same values
// stored untransposed as MXFP4 of shape [1, 5760, 2880] against their
// decoded values, for the cost of the bands and the transpose. ns/elem is
// a logical element.
func BenchmarkRunTransposedMXFP4(b *testing.B) {
	const rows, cols = 2880, 5760
	rng := rand.New(rand.NewPCG(5, 6))
	blocks, scales := make([]byte, rows*cols/2), make([]byte, rows*cols/32)
	for i := range blocks {
		blocks[i] = byte(rng.IntN(256))
	}
	for i := range scales {
		scales[i] = byte(120 + rng.IntN(14))
	}
	vals := make([]float32, rows*cols)
	if err := (quant.MXFP4{}).Decode(quant.Dims{Rows: cols, Cols: rows}, 0, cols, [][]byte{blocks, scales}, vals); err != nil {
		b.Fatal(err)
	}
	var f fileBuilder
	stored := f32Of(vals)
	logical := transposeF32(stored, []uint64{cols, rows})
	bs, ss := f.add(blocks), f.add(scales)
	for _, bb := range []struct {
		name     string
		q, other Operand
	}{
		{"transposed", Operand{Shape: []uint64{1, rows, cols}, Codec: quant.MXFP4{}, Transposed: true, Parts: [][]Segment{bs, ss}},
			Operand{DType: safetensors.F32, Shape: []uint64{1, rows, cols}, Segments: f.add(logical)}},
		{"stored-order", Operand{Shape: []uint64{1, cols, rows}, Codec: quant.MXFP4{}, Parts: [][]Segment{bs, ss}},
			Operand{DType: safetensors.F32, Shape: []uint64{1, cols, rows}, Segments: f.add(stored)}},
	} {
		b.Run(bb.name, func(b *testing.B) {
			readers := []io.ReaderAt{bytes.NewReader(f.b)}
			p := &Pair{Published: bb.other, Exported: bb.q}
			b.SetBytes(int64(bb.q.Size() + bb.other.Size()))
			for b.Loop() {
				if _, err := Run(context.Background(), readers, []*Pair{p}, Options{Workers: 1}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(rows*cols), "ns/elem")
		})
	}
}
