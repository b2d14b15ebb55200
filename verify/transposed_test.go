package verify

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/ckptcheck/ckptcheck/adapter"
	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/safetensors"
	"github.com/ckptcheck/ckptcheck/verify/internal/values"
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
	defer values.SetBlocking(0, 0)()
	for _, tile := range []uint64{8 << 20, 4 * 80 * 7, 4 * 80} { // whole matrices, bands of 7 rows, of 1 row
		values.SetBlocking(16, tile)
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
