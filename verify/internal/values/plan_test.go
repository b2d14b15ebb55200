package values

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ckptcheck/ckptcheck/safetensors"
)

// countingReader is a bytes.Reader that counts its reads.
type countingReader struct {
	*bytes.Reader
	reads atomic.Int64
}

func (r *countingReader) ReadAt(p []byte, off int64) (int, error) {
	r.reads.Add(1)
	return r.Reader.ReadAt(p, off)
}

// runJobs schedules hand-made jobs over sources and returns each job's
// filled buffers, by index.
func runJobs(t *testing.T, files []io.ReaderAt, jobs []*job, opt schedulerOptions) [][2][]byte {
	t.Helper()
	out := make([][2][]byte, len(jobs))
	var mu sync.Mutex
	i := 0
	err := schedule(context.Background(), files, opt, func() (*job, bool) {
		if i == len(jobs) {
			return nil, false
		}
		i++
		return jobs[i-1], true
	}, func(_ int, j *job, p, e []byte) error {
		mu.Lock()
		defer mu.Unlock()
		out[j.block] = [2][]byte{slices.Clone(p), slices.Clone(e)}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestScheduleFillsAndCoalesces(t *testing.T) {
	data := make([]byte, 256)
	for i := range data {
		data[i] = byte(i)
	}
	src := &countingReader{Reader: bytes.NewReader(data)}
	jobs := []*job{
		// Adjacent spans: one read.
		{block: 0, fills: [2]fill{{spans: []span{{0, 0, 4}, {0, 4, 4}}, size: 8}, {spans: []span{{0, 100, 2}}, size: 2}}},
		// A small gap: one read through it, the gap left out.
		{block: 1, fills: [2]fill{{spans: []span{{0, 10, 2}, {0, 20, 2}}, size: 4}, {spans: []span{{0, 30, 1}}, size: 1}}},
		// A tile of 2 rows × 3 columns, transposed after the read.
		{block: 2, fills: [2]fill{{spans: []span{{0, 40, 6}}, size: 6, transpose: &tile{rows: 2, cols: 3, elem: 1}}, {size: 0}}},
	}
	got := runJobs(t, []io.ReaderAt{src}, jobs, schedulerOptions{workers: 2, readAhead: 2})
	want := [][2][]byte{
		{{0, 1, 2, 3, 4, 5, 6, 7}, {100, 101}},
		{{10, 11, 20, 21}, {30}},
		{{40, 43, 41, 44, 42, 45}, {}},
	}
	for i := range want {
		if !bytes.Equal(got[i][0], want[i][0]) || !bytes.Equal(got[i][1], want[i][1]) {
			t.Errorf("job %d: %v, want %v", i, got[i], want[i])
		}
	}
	// One read per side per job, the empty side none: 5.
	if n := src.reads.Load(); n != 5 {
		t.Errorf("%d reads, want 5", n)
	}
}

// slowReader takes a millisecond over every read but one that fails at
// once, so that the failure comes first however goroutines are scheduled.
type slowReader struct{ *bytes.Reader }

func (r slowReader) ReadAt(p []byte, off int64) (int, error) {
	if len(p) <= 4 {
		time.Sleep(time.Millisecond)
	}
	return r.Reader.ReadAt(p, off)
}

func TestScheduleStopsOnError(t *testing.T) {
	src := slowReader{bytes.NewReader(make([]byte, 8))}
	jobs := make([]*job, 1000)
	for i := range jobs {
		jobs[i] = &job{block: i, fills: [2]fill{{spans: []span{{0, 0, 4}}, size: 4}, {spans: []span{{0, 4, 4}}, size: 4}}}
	}
	jobs[3].fills[0].spans[0].n = 16 // past the end
	jobs[3].fills[0].size = 16
	var consumed atomic.Int64
	i := 0
	err := schedule(context.Background(), []io.ReaderAt{src}, schedulerOptions{workers: 2, readAhead: 2}, func() (*job, bool) {
		if i == len(jobs) {
			return nil, false
		}
		i++
		return jobs[i-1], true
	}, func(int, *job, []byte, []byte) error { consumed.Add(1); return nil })
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("err = %v, want an unexpected EOF", err)
	}
	// Jobs read before the failure was seen may still be consumed; the
	// rest of the thousand are never read.
	if consumed.Load() > 100 {
		t.Errorf("%d of %d jobs consumed: the scheduler went on after the error", consumed.Load(), len(jobs))
	}
}

func TestTranspose(t *testing.T) {
	for _, elem := range []int{1, 2, 3, 4, 8} {
		for _, sh := range [][2]int{{1, 1}, {2, 3}, {33, 65}, {64, 1}, {1, 70}} {
			for _, offset := range []int{0, 1} { // aligned: as words; not: byte by byte
				rows, cols := sh[0], sh[1]
				src := make([]byte, elem*rows*cols+offset)[offset:]
				for i := range src {
					src[i] = byte(i*7 + i/elem)
				}
				dst := make([]byte, len(src)+offset)[offset:]
				transpose(dst, src, &tile{rows: rows, cols: cols, elem: elem})
				for r := range rows {
					for c := range cols {
						s, d := elem*(r*cols+c), elem*(c*rows+r)
						if !bytes.Equal(dst[d:d+elem], src[s:s+elem]) {
							t.Fatalf("%d-byte elements, %dx%d, offset %d: element (%d, %d) misplaced", elem, rows, cols, offset, r, c)
						}
					}
				}
			}
		}
	}
}

// TestPlanSpans builds plans over a hand-made file: a rename, a row
// permutation, and a transposed operand, and checks the bytes each block
// reads.
func TestPlanSpans(t *testing.T) {
	// x: U8 [4, 3] = 0..11, after 5 other bytes of the file.
	data := []byte{99, 99, 99, 99, 99, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}
	readers := []io.ReaderAt{bytes.NewReader(data)}
	whole := Operand{DType: safetensors.U8, Shape: []uint64{4, 3}, Segments: []Segment{{File: 0, Offset: 5, Length: 12}}}
	permuted := whole
	permuted.Segments = []Segment{{File: 0, Offset: 5 + 6, Length: 6}, {File: 0, Offset: 5, Length: 6}}
	transposed := Operand{DType: safetensors.U8, Shape: []uint64{3, 4}, Segments: whole.Segments}
	transposedStored := transposed
	transposedStored.Transposed = true
	defer SetBlocking(5, 4)() // a tile of one logical row of 4 U8
	tests := []struct {
		name     string
		pub, exp Operand
		want     [][]byte // the exported side's bytes, block by block
	}{
		{"rename", whole, whole, [][]byte{{0, 1, 2, 3, 4}, {5, 6, 7, 8, 9}, {10, 11}}},
		{"permuted rows", whole, permuted, [][]byte{{6, 7, 8, 9, 10}, {11, 0, 1, 2, 3}, {4, 5}}},
		// The logical [3, 4] is the stored [4, 3] transposed; a block holds
		// whole rows (5 elements hold 1 row of 4).
		{"transposed", transposed, transposedStored, [][]byte{{0, 3, 6, 9}, {1, 4, 7, 10}, {2, 5, 8, 11}}},
	}
	for _, tt := range tests {
		p := &Pair{Published: tt.pub, Exported: tt.exp}
		b := newBlocking(p)
		var jobs []*job
		for k := range b.blocks {
			jobs = append(jobs, b.job(p, k))
		}
		got := runJobs(t, readers, jobs, schedulerOptions{workers: 1, readAhead: 1})
		if len(got) != len(tt.want) {
			t.Fatalf("%s: %d blocks, want %d", tt.name, len(got), len(tt.want))
		}
		for i := range got {
			if !bytes.Equal(got[i][1], tt.want[i]) {
				t.Errorf("%s: block %d = %v, want %v", tt.name, i, got[i][1], tt.want[i])
			}
		}
	}
}

func BenchmarkTranspose(b *testing.B) {
	for _, e := range []int{2, 4} {
		rows, cols := 2048, 1024
		src := make([]byte, rows*cols*e)
		dst := make([]byte, len(src))
		b.Run(fmt.Sprintf("elem%d", e), func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			for b.Loop() {
				transpose(dst, src, &tile{rows: rows, cols: cols, elem: e})
			}
		})
	}
}

// BenchmarkCopy is the reference for BenchmarkTranspose: the same bytes
// copied in order.
func BenchmarkCopy(b *testing.B) {
	src := make([]byte, 2048*1024*4)
	dst := make([]byte, len(src))
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		copy(dst, src)
	}
}
