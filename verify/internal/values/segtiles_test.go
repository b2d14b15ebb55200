package values

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/quant"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// TestTiledOperand: DeepSeek's kv_b_proj [H·(nope+v), rank] from
// llama.cpp's per-head split, attn_k_b [H, rank, nope] (each head's key
// rows stored transposed) and attn_v_b [H, v, rank], compares like the
// tensor those heads make, on every blocking and worker count, plain and
// from a projection's view; a head's tile from another head does not.
func TestTiledOperand(t *testing.T) {
	const heads, nope, v, rank = 3, 4, 2, 8
	rng := rand.New(rand.NewPCG(25, 3))
	kb := make([][]float32, heads) // [rank, nope] a head
	vb := make([][]float32, heads) // [v, rank] a head
	var want []float32             // [heads·(nope+v), rank]
	for h := range heads {
		for range rank * nope {
			kb[h] = append(kb[h], float32(rng.NormFloat64()))
		}
		for range v * rank {
			vb[h] = append(vb[h], float32(rng.NormFloat64()))
		}
		want = append(append(want, transposeMatrices(kb[h], rank, nope)...), vb[h]...)
	}
	var f fileBuilder
	plain := Operand{DType: safetensors.F32, Shape: []uint64{heads * (nope + v), rank}, Segments: f.add(f32Of(want))}
	kSegs, vSegs := make([]Segment, heads), make([]Segment, heads)
	for h := range heads {
		kSegs[h], vSegs[h] = f.add(f32Of(kb[h]))[0], f.add(f32Of(vb[h]))[0]
		kSegs[h].Transposed = true
	}
	tiled := func(order []int) Operand {
		o := Operand{DType: safetensors.F32, Shape: plain.Shape}
		for h, k := range order {
			o.Segments = append(o.Segments, kSegs[k], vSegs[h])
		}
		return o
	}
	readers := []io.ReaderAt{bytes.NewReader(f.b)}
	for _, blocking := range []struct{ elems, tile uint64 }{{1 << 18, 8 << 20}, {8, 2 * rank * 4}, {1, 1}} {
		for _, workers := range []int{1, 3} {
			name := fmt.Sprintf("%d elements, tile %d, %d workers", blocking.elems, blocking.tile, workers)
			restore := SetBlocking(blocking.elems, blocking.tile)
			faithful := &Pair{Published: plain, Exported: tiled([]int{0, 1, 2})}
			reversed := &Pair{Published: tiled([]int{0, 1, 2}), Exported: plain}
			swapped := &Pair{Published: plain, Exported: tiled([]int{0, 2, 1})}
			_, err := Run(context.Background(), readers, []*Pair{faithful, reversed, swapped}, Options{Workers: workers, ReadAhead: 2})
			restore()
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			for _, p := range []*Pair{faithful, reversed} {
				if st := p.Stats; !st.BitIdentical || st.Mismatches != 0 {
					t.Errorf("%s: %s, want equal", name, statsText(st))
				}
			}
			// Heads 1 and 2 swapped: rows 6..10 and 12..16 differ.
			if st := swapped.Stats; st.Mismatches != 2*nope*rank || st.MaxAt == nil || st.MaxAt[0] < 6 {
				t.Errorf("%s: heads swapped: %s", name, statsText(st))
			}
		}
	}
	for _, tt := range []struct {
		order   []int
		differs uint64
	}{{[]int{0, 1, 2}, 0}, {[]int{0, 2, 1}, 2 * nope * rank}} {
		proj := &Projection{Base: plain, Merged: tiled(tt.order)}
		if _, err := Project(context.Background(), readers, []*Projection{proj}, Options{}); err != nil {
			t.Fatalf("projection: %v", err)
		}
		if proj.Differs != tt.differs {
			t.Errorf("projection through a tiled operand, heads %v: %d elements differ, want %d", tt.order, proj.Differs, tt.differs)
		}
	}
}

// TestTiledAgainstCodec: a tiled operand against a block-quantized one
// (DeepSeek-V3's FP8 kv_b_proj, blocks of 128 rows, heads of 128 key and
// 128 value rows) compares in bands of whole blocks: against the values
// the blocks decode to, exactly; with two heads swapped, not.
func TestTiledAgainstCodec(t *testing.T) {
	const heads, nope, v, rank = 3, 4, 2, 8
	const rows = heads * (nope + v)
	fp8, err := quant.NewBlockFP8(2, 4)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(25, 4))
	codes, scales := make([]byte, rows*rank), make([]float32, rows/2*rank/4)
	for i := range codes {
		if codes[i] = byte(rng.IntN(256)); codes[i]&0x7F == 0x7F {
			codes[i] = 0x38 // no NaN
		}
	}
	for i := range scales {
		scales[i] = float32(rng.Float64() + 0.5)
	}
	vals := make([]float32, rows*rank)
	d := quant.Dims{Rows: rows, Cols: rank}
	if err := fp8.Decode(d, 0, rows, [][]byte{codes, f32Of(scales)}, vals); err != nil {
		t.Fatal(err)
	}
	var f fileBuilder
	q := Operand{Codec: fp8, Shape: []uint64{rows, rank}, Parts: [][]Segment{f.add(codes), f.add(f32Of(scales))}}
	var ks, vs [heads]Segment
	for h := range heads {
		head := vals[h*(nope+v)*rank:]
		ks[h] = f.add(f32Of(transposeMatrices(head[:nope*rank], nope, rank)))[0]
		ks[h].Transposed = true
		vs[h] = f.add(f32Of(head[nope*rank : (nope+v)*rank]))[0]
	}
	tiled := func(order ...int) Operand {
		o := Operand{DType: safetensors.F32, Shape: q.Shape}
		for h, k := range order {
			o.Segments = append(o.Segments, ks[k], vs[h])
		}
		return o
	}
	for _, blocking := range []struct{ elems, tile uint64 }{{1 << 18, 8 << 20}, {1, 1}} {
		restore := SetBlocking(blocking.elems, blocking.tile)
		faithful, swapped := &Pair{Published: q, Exported: tiled(0, 1, 2)}, &Pair{Published: q, Exported: tiled(1, 0, 2)}
		_, err := Run(context.Background(), []io.ReaderAt{bytes.NewReader(f.b)}, []*Pair{faithful, swapped}, Options{Workers: 2})
		restore()
		if err != nil {
			t.Fatal(err)
		}
		if st := faithful.Stats; st.Mismatches != 0 || st.MaxAbsDiff != 0 {
			t.Errorf("tile %d: %s, want equal", blocking.tile, statsText(st))
		}
		if st := swapped.Stats; st.Mismatches == 0 {
			t.Errorf("tile %d: heads swapped: %s", blocking.tile, statsText(st))
		}
		if b := faithful.blocks; b.perRows%2 != 0 {
			t.Errorf("tile %d: bands of %d rows, not whole blocks of 2", blocking.tile, b.perRows)
		}
	}
	coarse, _ := quant.NewBlockFP8(4, 4) // blocks of 4 rows across the heads' edges
	p := &Pair{Published: Operand{Codec: coarse, Shape: q.Shape, Parts: q.Parts}, Exported: tiled(0, 1, 2)}
	if err := p.prepareTiled(); err == nil || !strings.Contains(err.Error(), "tiles of 4 rows") {
		t.Errorf("blocks of 4 rows: %v", err)
	}
}

// TestTiledOperandErrors: a transposed segment must hold whole rows of a
// plain operand read as it comes, against a side read as it comes.
func TestTiledOperandErrors(t *testing.T) {
	shape := []uint64{4, 2}
	seg := func(n uint64, tr bool) Segment { return Segment{Length: n, Transposed: tr} }
	q8 := Operand{Codec: quant.ScaledFP8{}, Shape: []uint64{1, 4, 2}}
	for _, tt := range []struct {
		name     string
		pub, exp Operand
		want     string
	}{
		{"part of a row", Operand{DType: safetensors.F32, Shape: shape, Segments: []Segment{seg(4, false), seg(8, true), seg(20, false)}},
			Operand{DType: safetensors.F32, Shape: shape, Segments: []Segment{seg(32, false)}}, "no whole rows"},
		{"too few bytes", Operand{DType: safetensors.F32, Shape: shape, Segments: []Segment{seg(8, true)}},
			Operand{DType: safetensors.F32, Shape: shape, Segments: []Segment{seg(32, false)}}, "the shape 32"},
		{"stored transposed", Operand{DType: safetensors.F32, Shape: shape, Transposed: true, Segments: []Segment{seg(32, true)}},
			Operand{DType: safetensors.F32, Shape: shape, Segments: []Segment{seg(32, false)}}, "stored transposed, interleaved"},
		{"against a codec", Operand{DType: safetensors.F32, Shape: shape, Segments: []Segment{seg(32, true)}}, q8, "against a side"},
	} {
		p := &Pair{Published: tt.pub, Exported: tt.exp}
		if err := p.prepareTiled(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
}
