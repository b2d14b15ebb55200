package quanttest

import (
	"fmt"
	"math"
	"runtime"
	"testing"

	"github.com/ckptcheck/ckptcheck/quant"
)

// A Vector is a weight in an encoding and the values it decodes to.
type Vector struct {
	Name string
	Dims quant.Dims
	// Parts holds each part whole, in the codec's Parts order.
	Parts [][]byte
	// Want is the weight's Rows·Cols values. NaNs match any NaN; every
	// other value, the sign of zero included, must match bit for bit.
	Want []float32
}

// maxSpansPerPart bounds the spans a row range may need: a few strided runs
// per part, however large the weight.
const maxSpansPerPart = 4

// TestCodec checks c against vectors and against hostile shapes:
//   - Parts, Tile and String are well-formed;
//   - Sizes agrees with each vector's parts;
//   - decoding a vector whole gives Want bit for bit;
//   - every tile-aligned row range, the partial last block included, names
//     spans inside the parts, few of them, whose bytes decode to the same
//     rows of Want;
//   - misaligned, empty and out-of-range row ranges are errors;
//   - truncated or missing parts and a short output are errors, not panics;
//   - shapes that overflow or dwarf the parts are errors or are served
//     without allocating by their numbers.
func TestCodec(t *testing.T, c quant.Codec, vectors []Vector) {
	t.Helper()
	parts, tile := c.Parts(), c.Tile()
	if c.String() == "" || len(parts) == 0 || tile.Rows == 0 || tile.Cols == 0 {
		t.Fatalf("%T: name %q, %d parts, tile %+v: want a name, parts and a non-zero tile", c, c.String(), len(parts), tile)
	}
	if len(vectors) == 0 {
		t.Errorf("%s: no vectors", c)
	}
	for _, v := range vectors {
		t.Run(v.Name, func(t *testing.T) {
			noPanic(t, func() { testVector(t, c, v) })
		})
	}
	t.Run("hostile shapes", func(t *testing.T) {
		noPanic(t, func() { testHostile(t, c) })
	})
}

func testVector(t *testing.T, c quant.Codec, v Vector) {
	n, ok := v.Dims.Values()
	if !ok || uint64(len(v.Want)) != n || len(v.Parts) != len(c.Parts()) {
		t.Fatalf("bad vector: dims %+v, %d values, %d parts", v.Dims, len(v.Want), len(v.Parts))
	}
	sizes := make([]uint64, len(c.Parts()))
	if err := c.Sizes(v.Dims, sizes); err != nil {
		t.Fatalf("Sizes: %v", err)
	}
	for i, s := range sizes {
		if s != uint64(len(v.Parts[i])) {
			t.Errorf("Sizes: part %d (%s) is %d bytes, the vector's is %d", i, c.Parts()[i].Role, s, len(v.Parts[i]))
		}
	}
	got := make([]float32, n)
	if err := c.Decode(v.Dims, 0, v.Dims.Rows, v.Parts, got); err != nil {
		t.Fatalf("Decode whole: %v", err)
	}
	same(t, "whole", got, v.Want)

	// Every aligned range of one or two tiles, and every range to the end.
	rows, step := v.Dims.Rows, c.Tile().Rows
	for r0 := uint64(0); r0 < rows; r0 += step {
		for _, r1 := range []uint64{min(r0+step, rows), min(r0+2*step, rows), rows} {
			checkRange(t, c, v, sizes, r0, r1)
		}
	}

	bad := [][2]uint64{{0, 0}, {rows, rows + 1}, {0, rows + 1}}
	if step > 1 && rows > 1 {
		bad = append(bad, [2]uint64{1, rows}, [2]uint64{0, min(step-1, rows-1)})
	}
	for _, r := range bad {
		if _, err := c.Spans(v.Dims, r[0], r[1], nil); err == nil {
			t.Errorf("Spans(rows [%d, %d) of %d, tile %d): no error", r[0], r[1], rows, step)
		}
		if err := c.Decode(v.Dims, r[0], r[1], v.Parts, got); err == nil {
			t.Errorf("Decode(rows [%d, %d) of %d, tile %d): no error", r[0], r[1], rows, step)
		}
	}

	// Truncated and missing parts, a short output.
	for i := range v.Parts {
		short := append([][]byte(nil), v.Parts...)
		if len(short[i]) > 0 {
			short[i] = short[i][:len(short[i])-1]
			if err := c.Decode(v.Dims, 0, rows, short, got); err == nil {
				t.Errorf("Decode with part %d one byte short: no error", i)
			}
		}
		short[i] = nil
		if sizes[i] > 0 {
			if err := c.Decode(v.Dims, 0, rows, short, got); err == nil {
				t.Errorf("Decode with part %d empty: no error", i)
			}
		}
	}
	if err := c.Decode(v.Dims, 0, rows, v.Parts[:len(v.Parts)-1], got); err == nil {
		t.Error("Decode with a part missing: no error")
	}
	if n > 0 {
		if err := c.Decode(v.Dims, 0, rows, v.Parts, got[:n-1]); err == nil {
			t.Error("Decode into a short output: no error")
		}
	}
}

// checkRange decodes rows [r0, r1) from the bytes its spans name.
func checkRange(t *testing.T, c quant.Codec, v Vector, sizes []uint64, r0, r1 uint64) {
	t.Helper()
	spans, err := c.Spans(v.Dims, r0, r1, nil)
	if err != nil {
		t.Errorf("Spans(rows [%d, %d)): %v", r0, r1, err)
		return
	}
	checkSpans(t, c, spans, sizes, fmt.Sprintf("rows [%d, %d)", r0, r1))
	parts, err := quant.Gather(v.Parts, spans, nil)
	if err != nil {
		t.Errorf("rows [%d, %d): %v", r0, r1, err)
		return
	}
	got := make([]float32, (r1-r0)*v.Dims.Cols)
	if err := c.Decode(v.Dims, r0, r1, parts, got); err != nil {
		t.Errorf("Decode(rows [%d, %d)) from its spans: %v", r0, r1, err)
		return
	}
	same(t, fmt.Sprintf("rows [%d, %d)", r0, r1), got, v.Want[r0*v.Dims.Cols:r1*v.Dims.Cols])
}

func checkSpans(t *testing.T, c quant.Codec, spans []quant.Span, sizes []uint64, what string) {
	t.Helper()
	if len(spans) > maxSpansPerPart*len(sizes) {
		t.Errorf("%s: %d spans for %d parts, want at most %d a part", what, len(spans), len(sizes), maxSpansPerPart)
	}
	for _, s := range spans {
		if s.Part < 0 || s.Part >= len(sizes) {
			t.Errorf("%s: span %+v of no part", what, s)
			continue
		}
		if end, ok := s.End(); !ok || end > sizes[s.Part] || s.Count == 0 || (s.Count > 1 && s.Stride < s.Len) {
			t.Errorf("%s: span %+v leaves part %d's %d bytes, or overlaps itself", what, s, s.Part, sizes[s.Part])
		}
	}
}

// hostileDims are shapes a header might claim.
var hostileDims = []quant.Dims{
	{Rows: math.MaxUint64, Cols: math.MaxUint64},
	{Rows: math.MaxUint64, Cols: 1},
	{Rows: 1, Cols: math.MaxUint64},
	{Rows: 1 << 40, Cols: 1 << 40},
	{Rows: 1 << 32, Cols: 1 << 31},
	{Rows: 3, Cols: 1 << 62},
	{Rows: 0, Cols: 128},
	{Rows: 128, Cols: 0},
	{Rows: 1, Cols: 3},
}

func testHostile(t *testing.T, c quant.Codec) {
	sizes := make([]uint64, len(c.Parts()))
	tiny := make([][]byte, len(c.Parts()))
	for i := range tiny {
		tiny[i] = make([]byte, 16)
	}
	dst := make([]float32, 16)
	spans := make([]quant.Span, 0, 64)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for _, d := range hostileDims {
		if c.Sizes(d, sizes) != nil || d.Rows == 0 {
			continue
		}
		r1 := min(c.Tile().Rows, d.Rows)
		got, err := c.Spans(d, 0, r1, spans[:0])
		if err == nil {
			checkSpans(t, c, got, sizes, fmt.Sprintf("%+v rows [0, %d)", d, r1))
		}
		got, err = c.Spans(d, d.Rows-1-(d.Rows-1)%c.Tile().Rows, d.Rows, spans[:0])
		if err == nil {
			checkSpans(t, c, got, sizes, fmt.Sprintf("%+v last rows", d))
		}
		if n, ok := (quant.Dims{Rows: r1, Cols: d.Cols}).Values(); ok && n <= uint64(len(dst)) {
			continue // small enough that tiny parts might hold it
		}
		if err := c.Decode(d, 0, r1, tiny, dst); err == nil {
			t.Errorf("Decode(%+v) from 16-byte parts into 16 values: no error", d)
		}
	}
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Errorf("hostile shapes allocated %d bytes", grew)
	}
}

func same(t *testing.T, what string, got, want []float32) {
	t.Helper()
	for i := range want {
		g, w := got[i], want[i]
		if math.Float32bits(g) != math.Float32bits(w) && !(g != g && w != w) {
			t.Errorf("%s: value %d = %v (%#08x), want %v (%#08x)", what, i, g, math.Float32bits(g), w, math.Float32bits(w))
			return
		}
	}
}

func noPanic(t *testing.T, f func()) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("panic: %v", r)
		}
	}()
	f()
}
