package values

import (
	"bytes"
	"io"
	"testing"

	"github.com/ckptcheck/ckptcheck/safetensors"
)

// TestTransposedReadsTiles: a transposed side is read a tile at a time,
// never a row or an element at a time: each band of rows is one read per
// 8 MiB of the stored matrix it runs through.
func TestTransposedReadsTiles(t *testing.T) {
	const rows, cols = 768, 2048 // a Qwen3-30B-A3B expert's gate_proj
	// The published [rows, cols] BF16, then the export stored [cols, rows] F32.
	data := make([]byte, 2*rows*cols+4*rows*cols)
	shape := []uint64{rows, cols}
	p := &Pair{
		Published: Operand{DType: safetensors.BF16, Shape: shape, Segments: []Segment{{Length: 2 * rows * cols}}},
		Exported:  Operand{DType: safetensors.F32, Shape: shape, Segments: []Segment{{Offset: 2 * rows * cols, Length: 4 * rows * cols}}, Transposed: true},
	}
	defer SetBlocking(0, 0)()
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
		SetBlocking(0, tt.tile)
		b := newBlocking(p)
		var jobs []*job
		for k := range b.blocks {
			jobs = append(jobs, b.job(p, k))
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

// TestTileReadAhead: runs with whole-tile blocks read ahead within the
// tile budget, at least one block; others keep the read-ahead asked for.
func TestTileReadAhead(t *testing.T) {
	f32 := Operand{DType: safetensors.F32}
	bf16 := Operand{DType: safetensors.BF16}
	f32T := Operand{DType: safetensors.F32, Transposed: true}
	tiled := &Pair{Published: bf16, Exported: f32T,
		blocks: blocking{byRows: true, perRows: 768, cols: 2048}} // 3 + 6 + 6 MiB
	plain := &Pair{Published: bf16, Exported: f32, blocks: blocking{n: 1 << 20}}
	for _, tt := range []struct {
		pairs     []*Pair
		ask, want int
	}{
		{[]*Pair{plain}, 4, 4},
		{[]*Pair{plain, tiled}, 4, 1},
		{[]*Pair{tiled}, 0, 1},
	} {
		if got := tileReadAhead(tt.pairs, tt.ask); got != tt.want {
			t.Errorf("%d pairs, ask %d: read-ahead %d, want %d", len(tt.pairs), tt.ask, got, tt.want)
		}
	}
}
