package verify

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"testing"

	"github.com/ckptcheck/ckptcheck/adapter"
	"github.com/ckptcheck/ckptcheck/checkpoint"
	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// transposedPair writes n published BF16 matrices w.i [rows, cols] (random,
// as fixture makes weights) and an F32 export of them moved by ~1e-3, so
// that every block takes the decoding path: stored as they are (plain) or
// stored transposed as w.i.T [cols, rows]. It returns the directories and
// the adapter that reads the transposed export.
func transposedPair(tb testing.TB, n, rows, cols int) (pub, plain, transposed string, a *adapter.Adapter) {
	tb.Helper()
	dir := tb.TempDir()
	q := fixture.Qwen3{Seed: 7}
	var p, e, et []fixture.Tensor
	for i := range n {
		w := q.Tensor(fixture.Spec{Name: fmt.Sprintf("w.%d", i), Shape: []uint64{uint64(rows), uint64(cols)}}, safetensors.BF16)
		p = append(p, w)
		x := fixture.Perturb(w, safetensors.F32, 1e-3, uint64(i))
		e = append(e, x)
		t := fixture.Tensor{Name: w.Name + ".T", DType: safetensors.F32, Shape: []uint64{uint64(cols), uint64(rows)}, Data: make([]byte, len(x.Data))}
		for r := range rows {
			for c := range cols {
				copy(t.Data[4*(c*rows+r):4*(c*rows+r)+4], x.Data[4*(r*cols+c):])
			}
		}
		et = append(et, t)
	}
	pub, plain, transposed = filepath.Join(dir, "p.safetensors"), filepath.Join(dir, "e.safetensors"), filepath.Join(dir, "t.safetensors")
	for path, ts := range map[string][]fixture.Tensor{pub: p, plain: e, transposed: et} {
		if err := fixture.WriteFile(path, ts, nil); err != nil {
			tb.Fatal(err)
		}
	}
	a, err := adapter.Parse("test", "name t\ntranspose w.{i}.T w.{i}")
	if err != nil {
		tb.Fatal(err)
	}
	return pub, plain, transposed, a
}

// TestTransposedValues: values read through a transposed view equal those
// read plainly, statistics and all, with tiles both whole and in bands.
func TestTransposedValues(t *testing.T) {
	pub, plain, transposed, a := transposedPair(t, 3, 96, 80)
	opt := ValueOptions{Policy: ValuePolicy{Default: Tolerance{Rtol: 1e-2}}}
	want, err := diffPaths(t, pub, plain, DiffOptions{}).CompareValues(context.Background(), opt)
	if err != nil {
		t.Fatal(err)
	}
	defer func(b, tb uint64) { blockElems, tileBytes = b, tb }(blockElems, tileBytes)
	for _, tile := range []uint64{8 << 20, 4 * 80 * 7, 4 * 80} { // whole matrices, bands of 7 rows, of 1 row
		tileBytes, blockElems = tile, 16
		d := diffPaths(t, pub, transposed, DiffOptions{Exported: SideOptions{Chain: adapter.Chain{a}, Fixed: true}})
		got, err := d.CompareValues(context.Background(), opt)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Tensors) != 3 || got.Mismatched != 0 || got.WithinTolerance != 3 {
			t.Fatalf("tile %d: %+v", tile, got)
		}
		for i, s := range got.Tensors {
			w := want.Tensors[i]
			if s.MaxAbsDiff != w.MaxAbsDiff || fmt.Sprint(s.MaxAt) != fmt.Sprint(w.MaxAt) || s.Elements != w.Elements {
				t.Errorf("tile %d: %s: %+v, plain %+v", tile, s.Key, s, w)
			}
		}
	}
}

// TestTransposedReadsTiles: a transposed side is read a tile at a time,
// never a row or an element at a time: each band of rows is one read per
// 8 MiB of the stored matrix it runs through.
func TestTransposedReadsTiles(t *testing.T) {
	const rows, cols = 768, 2048 // a Qwen3-30B-A3B expert's gate_proj
	var buf bytes.Buffer
	w := safetensors.NewWriter(&buf)
	w.Add("p", safetensors.BF16, []uint64{rows, cols}, make([]byte, 2*rows*cols))
	w.Add("e", safetensors.F32, []uint64{cols, rows}, make([]byte, 4*rows*cols))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := safetensors.NewFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	shard := &checkpoint.Shard{Name: "m", File: f}
	src := []Source{{Tensor: f.Tensor("p"), Shard: shard}, {Tensor: f.Tensor("e"), Shard: shard}}
	shape := []uint64{rows, cols}
	p := &pair{
		pub: operand{t: adapter.Tensor{DType: safetensors.BF16, Shape: shape, Segments: []adapter.Segment{{Source: 0, Length: 2 * rows * cols}}}, src: src},
		exp: operand{t: adapter.Tensor{DType: safetensors.F32, Shape: shape, Segments: []adapter.Segment{{Source: 1, Length: 4 * rows * cols}}}, src: src, transposed: true},
	}
	p.stats.Elements = rows * cols
	data := mustRead(t, f.DataSection())
	defer func(tb uint64) { tileBytes = tb }(tileBytes)
	for _, tt := range []struct {
		tile          uint64
		blocks, spans int
	}{
		// The whole 6 MiB matrix is one tile: one block, one span a side.
		{8 << 20, 1, 1},
		// Tiles of 1 MiB: bands of 128 rows, a piece of every stored row
		// each, read through the gaps in one read a band.
		{1 << 20, rows / 128, cols},
	} {
		tileBytes = tt.tile
		b := newBlocking(p)
		var fs files
		var jobs []*job
		for k := range b.blocks {
			jobs = append(jobs, b.job(&fs, p, k))
		}
		if len(jobs) != tt.blocks || len(jobs[0].fills[1].spans) != tt.spans {
			t.Fatalf("tile %d: %d blocks of %d spans, want %d of %d", tt.tile, len(jobs), len(jobs[0].fills[1].spans), tt.blocks, tt.spans)
		}
		counting := &countingReader{Reader: bytes.NewReader(data)}
		runJobs(t, []io.ReaderAt{counting}, jobs, schedulerOptions{workers: 1, readAhead: 1})
		if n := counting.reads.Load(); n != int64(2*tt.blocks) {
			t.Errorf("tile %d: %d reads, want %d: one a side a block", tt.tile, n, 2*tt.blocks)
		}
	}
}

func mustRead(t *testing.T, r io.ReaderAt) []byte {
	t.Helper()
	sr, ok := r.(*io.SectionReader)
	if !ok {
		t.Fatal("data section is not a section reader")
	}
	b := make([]byte, sr.Size())
	if _, err := sr.ReadAt(b, 0); err != nil {
		t.Fatal(err)
	}
	return b
}

// BenchmarkValuesTransposed: the decoding path (BF16 published, an F32
// export moved by ~1e-3, within --rtol 1e-2) with the export stored as
// published (plain) or transposed, read through a transpose rule, on local
// files with a warm page cache. The target: transposed at least 1/3 of
// the plain rate (compare the MB/s of the pairs). Shapes: a Qwen3-30B-A3B
// expert's gate_proj [768, 2048] (a 6 MiB F32 tile: one read a matrix)
// and a [2048, 2048] matrix (16 MiB: bands of 8 MiB tiles).
func BenchmarkValuesTransposed(b *testing.B) {
	for _, sh := range [][2]int{{768, 2048}, {2048, 2048}} {
		rows, cols := sh[0], sh[1]
		n := 48 << 20 / (2 * rows * cols) // 48 MiB published
		pub, plain, transposed, a := transposedPair(b, n, rows, cols)
		opt := ValueOptions{Policy: ValuePolicy{Default: Tolerance{Rtol: 1e-2}}}
		for _, v := range []struct {
			name string
			exp  string
			opt  DiffOptions
		}{
			{"plain", plain, DiffOptions{}},
			{"transposed", transposed, DiffOptions{Exported: SideOptions{Chain: adapter.Chain{a}, Fixed: true}}},
		} {
			b.Run(fmt.Sprintf("%dx%d/%s", rows, cols, v.name), func(b *testing.B) {
				d := diffPaths(b, pub, v.exp, v.opt)
				b.SetBytes(d.ValueBytes())
				for b.Loop() {
					rep, err := d.CompareValues(context.Background(), opt)
					if err != nil || rep.WithinTolerance != n {
						b.Fatal(err, rep)
					}
				}
			})
		}
	}
}

// TestSwappedShapes: a shape mismatch says "transposed" for a matrix and
// for a stack of matrices whose last two dimensions are swapped.
func TestSwappedShapes(t *testing.T) {
	for _, tt := range []struct {
		a, b []uint64
		want bool
	}{
		{[]uint64{2, 3}, []uint64{3, 2}, true},
		{[]uint64{8, 12, 6}, []uint64{8, 6, 12}, true},
		{[]uint64{8, 12, 6}, []uint64{12, 8, 6}, false},
		{[]uint64{4}, []uint64{4}, false},
		{[]uint64{2, 3}, []uint64{1, 3, 2}, false},
	} {
		if got := swapped(tt.a, tt.b); got != tt.want {
			t.Errorf("swapped(%v, %v) = %v", tt.a, tt.b, got)
		}
	}
}

// TestTileReadAhead: runs with whole-tile blocks read ahead within the
// tile budget, at least one block; others keep the read-ahead asked for.
func TestTileReadAhead(t *testing.T) {
	f32 := adapter.Tensor{DType: safetensors.F32}
	bf16 := adapter.Tensor{DType: safetensors.BF16}
	tiled := &pair{pub: operand{t: bf16}, exp: operand{t: f32, transposed: true},
		blocks: blocking{byRows: true, perRows: 768, cols: 2048}} // 3 + 6 + 6 MiB
	plain := &pair{pub: operand{t: bf16}, exp: operand{t: f32}, blocks: blocking{n: 1 << 20}}
	for _, tt := range []struct {
		pairs     []*pair
		ask, want int
	}{
		{[]*pair{plain}, 4, 4},
		{[]*pair{plain, tiled}, 4, 1},
		{[]*pair{tiled}, 0, 1},
	} {
		if got := tileReadAhead(tt.pairs, tt.ask); got != tt.want {
			t.Errorf("%d pairs, ask %d: read-ahead %d, want %d", len(tt.pairs), tt.ask, got, tt.want)
		}
	}
}
