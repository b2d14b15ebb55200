package values

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ckptcheck/ckptcheck/quant"
	"github.com/ckptcheck/ckptcheck/quant/quanttest"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// fileBuilder lays tensors out one after the other in one in-memory file.
type fileBuilder struct{ b []byte }

func (f *fileBuilder) add(data []byte) []Segment {
	seg := Segment{File: 0, Offset: uint64(len(f.b)) + 3, Length: uint64(len(data))}
	f.b = append(f.b, 0xAA, 0xBB, 0xCC) // a gap, so that segments are not adjacent
	f.b = append(f.b, data...)
	return []Segment{seg}
}

// stubCodec is ScaledFP8 that counts its decodes and claims a tile of
// tileRows rows, failing a range that is not aligned to it.
type stubCodec struct {
	quant.ScaledFP8
	tileRows uint64
	decodes  *atomic.Int64
}

func (c stubCodec) Tile() quant.Tile { return quant.Tile{Rows: c.tileRows, Cols: 1} }

func (c stubCodec) Spans(d quant.Dims, r0, r1 uint64, dst []quant.Span) ([]quant.Span, error) {
	if err := quant.CheckRange(c.Tile(), d, r0, r1); err != nil {
		return dst, err
	}
	return c.ScaledFP8.Spans(d, r0, r1, dst)
}

func (c stubCodec) Decode(d quant.Dims, r0, r1 uint64, parts [][]byte, dst []float32) error {
	c.decodes.Add(1)
	if err := quant.CheckRange(c.Tile(), d, r0, r1); err != nil {
		return err
	}
	return c.ScaledFP8.Decode(d, r0, r1, parts, dst)
}

// fp8Tensor is a ScaledFP8 weight: its data bytes (random, NaNs and both
// zeros among them), a scale a matrix, and the F32 bytes they decode to.
type fp8Tensor struct {
	shape       []uint64
	data, scale []byte
	decoded     []byte
}

func newFP8Tensor(t testing.TB, shape []uint64, seed uint64) fp8Tensor {
	t.Helper()
	d, mats := matrixDims(shape)
	rng := rand.New(rand.NewPCG(seed, 1))
	x := fp8Tensor{shape: shape, data: make([]byte, mats*d.Rows*d.Cols)}
	for i := range x.data {
		x.data[i] = byte(rng.IntN(256))
	}
	vals := make([]float32, len(x.data))
	per := d.Rows * d.Cols
	for m := range mats {
		s := float32(0.25 + rng.Float64())
		x.scale = binary.LittleEndian.AppendUint32(x.scale, math.Float32bits(s))
		parts := [][]byte{x.data[m*per : (m+1)*per], x.scale[4*m:]}
		if err := (quant.ScaledFP8{}).Decode(d, 0, d.Rows, parts, vals[m*per:(m+1)*per]); err != nil {
			t.Fatal(err)
		}
	}
	x.decoded = f32Of(vals)
	return x
}

func f32Of(vals []float32) []byte {
	b := make([]byte, 0, 4*len(vals))
	for _, v := range vals {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return b
}

// transposeF32 stores F32 bytes of logical shape [..., rows, cols] as
// [..., cols, rows].
func transposeF32(b []byte, shape []uint64) []byte {
	rows, cols := int(shape[len(shape)-2]), int(shape[len(shape)-1])
	out := make([]byte, len(b))
	for m := 0; m < len(b)/(4*rows*cols); m++ {
		base := 4 * m * rows * cols
		for r := range rows {
			for c := range cols {
				copy(out[base+4*(c*rows+r):][:4], b[base+4*(r*cols+c):])
			}
		}
	}
	return out
}

// statsText prints stats so that NaNs compare equal.
// statsText is s with its step measures by value.
func statsText(s Stats) string {
	st := s.Steps
	s.Steps = nil
	if st == nil {
		return fmt.Sprintf("%+v", s)
	}
	return fmt.Sprintf("%+v steps %+v", s, *st)
}

// sameStats reports whether a and b are equal but for the last bits of the
// sums, which depend on where blocks end: every count, coordinate and
// extreme must be equal. The step measures are not compared: a codec
// pair has them, its decoded F32 pair not.
func sameStats(a, b Stats) bool {
	a.Steps, b.Steps = nil, nil
	close := func(x, y float64) bool {
		return x == y || (x != x && y != y) || math.Abs(x-y) <= 1e-12*math.Max(math.Abs(x), math.Abs(y))
	}
	sums := close(a.MeanAbsDiff, b.MeanAbsDiff) && close(a.RelL2, b.RelL2) && close(a.Cosine, b.Cosine)
	a.MeanAbsDiff, a.RelL2, a.Cosine = 0, 0, 0
	b.MeanAbsDiff, b.RelL2, b.Cosine = 0, 0, 0
	return sums && statsText(a) == statsText(b)
}

// TestCodecOperands compares codec pairs with the engine and checks each
// against the same comparison of the F32 tensors they decode to, over
// several worker counts and blockings: the numbers must be identical
// whatever the workers, and but for the last bits of sums (blocks of a
// codec pair are whole tiles of rows, so they may end elsewhere than a
// plain pair's) whatever the blocking.
func TestCodecOperands(t *testing.T) {
	type built struct {
		pair, reference pairSpec
	}
	var decodes atomic.Int64
	codec := func(tile uint64) quant.Codec {
		if tile == 0 {
			return quant.ScaledFP8{}
		}
		return stubCodec{tileRows: tile, decodes: &decodes}
	}
	tests := []struct {
		name  string
		shape []uint64
		// build lays out a pair over f and the pair of F32 tensors it
		// must compare like.
		build      func(t *testing.T, f *fileBuilder) built
		check      func(t *testing.T, s Stats)
		maxDecodes int64 // -1: any
	}{
		{name: "exact F32", shape: []uint64{7, 5}, maxDecodes: -1,
			build: func(t *testing.T, f *fileBuilder) built {
				x := newFP8Tensor(t, []uint64{7, 5}, 1)
				q := Operand{Shape: x.shape, Codec: codec(0), Parts: [][]Segment{f.add(x.data), f.add(x.scale)}}
				dec := Operand{DType: safetensors.F32, Shape: x.shape, Segments: f.add(x.decoded)}
				return built{pairSpec{Published: q, Exported: dec}, pairSpec{Published: dec, Exported: dec}}
			},
			check: func(t *testing.T, s Stats) {
				if !s.BitIdentical || s.Mismatches != 0 || s.MaxAbsDiff != 0 {
					t.Errorf("not exact: %+v", s)
				}
			}},
		{name: "one element differs", shape: []uint64{9, 6}, maxDecodes: -1,
			build: func(t *testing.T, f *fileBuilder) built {
				x := newFP8Tensor(t, []uint64{9, 6}, 2)
				for i := range x.data { // finite values only, so the difference is the largest
					if x.data[i]&0x7F == 0x7F {
						x.data[i] = 0x38
					}
				}
				x = fp8Redecode(t, x)
				other := append([]byte(nil), x.decoded...)
				binary.LittleEndian.PutUint32(other[4*(5*6+4):], math.Float32bits(1e6))
				q := Operand{Shape: x.shape, Codec: codec(4), Parts: [][]Segment{f.add(x.data), f.add(x.scale)}}
				dec := Operand{DType: safetensors.F32, Shape: x.shape, Segments: f.add(x.decoded)}
				exp := Operand{DType: safetensors.F32, Shape: x.shape, Segments: f.add(other)}
				return built{pairSpec{Published: q, Exported: exp}, pairSpec{Published: dec, Exported: exp}}
			},
			check: func(t *testing.T, s Stats) {
				if s.Mismatches != 1 || fmt.Sprint(s.MaxAt) != "[5 4]" || s.ExportedAt != 1e6 || s.BitIdentical {
					t.Errorf("want one mismatch at [5 4]: %+v", s)
				}
			}},
		{name: "exported codec, stacked, tile 3", shape: []uint64{3, 10, 4}, maxDecodes: -1,
			build: func(t *testing.T, f *fileBuilder) built {
				x := newFP8Tensor(t, []uint64{3, 10, 4}, 3)
				q := Operand{Shape: x.shape, Codec: codec(3), Parts: [][]Segment{f.add(x.data), f.add(x.scale)}}
				dec := Operand{DType: safetensors.F32, Shape: x.shape, Segments: f.add(x.decoded)}
				pub := Operand{DType: safetensors.F32, Shape: x.shape, Segments: f.add(perturb(x.decoded))}
				return built{pairSpec{Published: pub, Exported: q, Tolerance: Tolerance{Rtol: 1e-3}}, pairSpec{Published: pub, Exported: dec, Tolerance: Tolerance{Rtol: 1e-3}}}
			}},
		{name: "transposed partner", shape: []uint64{6, 11}, maxDecodes: -1,
			build: func(t *testing.T, f *fileBuilder) built {
				x := newFP8Tensor(t, []uint64{6, 11}, 4)
				q := Operand{Shape: x.shape, Codec: codec(4), Parts: [][]Segment{f.add(x.data), f.add(x.scale)}}
				dec := Operand{DType: safetensors.F32, Shape: x.shape, Segments: f.add(x.decoded)}
				tr := Operand{DType: safetensors.F32, Shape: x.shape, Segments: f.add(transposeF32(perturb(x.decoded), x.shape)), Transposed: true}
				return built{pairSpec{Published: q, Exported: tr}, pairSpec{Published: dec, Exported: tr}}
			}},
		{name: "1-D", shape: []uint64{13}, maxDecodes: -1,
			build: func(t *testing.T, f *fileBuilder) built {
				x := newFP8Tensor(t, []uint64{13}, 5)
				q := Operand{Shape: x.shape, Codec: codec(0), Parts: [][]Segment{f.add(x.data), f.add(x.scale)}}
				dec := Operand{DType: safetensors.F32, Shape: x.shape, Segments: f.add(x.decoded)}
				pub := Operand{DType: safetensors.BF16, Shape: x.shape, Segments: f.add(bf16Of(x.decoded))}
				return built{pairSpec{Published: pub, Exported: q}, pairSpec{Published: pub, Exported: dec}}
			}},
		{name: "identical codecs: no decoding", shape: []uint64{10, 7}, maxDecodes: 0,
			build: func(t *testing.T, f *fileBuilder) built {
				x := newFP8Tensor(t, []uint64{10, 7}, 6)
				q := Operand{Shape: x.shape, Codec: codec(4), Parts: [][]Segment{f.add(x.data), f.add(x.scale)}}
				q2 := Operand{Shape: x.shape, Codec: codec(4), Parts: [][]Segment{f.add(x.data), f.add(x.scale)}}
				dec := Operand{DType: safetensors.F32, Shape: x.shape, Segments: f.add(x.decoded)}
				return built{pairSpec{Published: q, Exported: q2}, pairSpec{Published: dec, Exported: dec}}
			},
			check: func(t *testing.T, s Stats) {
				if !s.BitIdentical || s.Mismatches != 0 {
					t.Errorf("not identical: %+v", s)
				}
			}},
		{name: "two codecs, one byte differs", shape: []uint64{10, 7}, maxDecodes: -1,
			build: func(t *testing.T, f *fileBuilder) built {
				x := newFP8Tensor(t, []uint64{10, 7}, 7)
				y := x
				y.data = append([]byte(nil), x.data...)
				y.data[8*7+2] ^= 0x01
				y = fp8Redecode(t, y)
				q := Operand{Shape: x.shape, Codec: codec(4), Parts: [][]Segment{f.add(x.data), f.add(x.scale)}}
				q2 := Operand{Shape: x.shape, Codec: codec(4), Parts: [][]Segment{f.add(y.data), f.add(y.scale)}}
				dx := Operand{DType: safetensors.F32, Shape: x.shape, Segments: f.add(x.decoded)}
				dy := Operand{DType: safetensors.F32, Shape: x.shape, Segments: f.add(y.decoded)}
				return built{pairSpec{Published: q, Exported: q2}, pairSpec{Published: dx, Exported: dy}}
			},
			check: func(t *testing.T, s Stats) {
				if s.BitIdentical || (fmt.Sprint(s.MaxAt) != "[8 2]" && fmt.Sprint(s.NonFiniteAt) != "[8 2]") {
					t.Errorf("want the difference at [8 2]: %+v", s)
				}
			}},
	}
	blockings := [][2]uint64{{0, 0}, {5, 0}, {12, 64}, {1, 16}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var f fileBuilder
			b := tt.build(t, &f)
			readers := []io.ReaderAt{bytes.NewReader(f.b)}
			var first *Stats
			for _, bl := range blockings {
				var want string
				for _, workers := range []int{1, 3} {
					restore := SetBlocking(bl[0], bl[1])
					ref, pair := b.reference.new(), b.pair.new()
					decodes.Store(0)
					if _, err := Run(context.Background(), readers, []*Pair{ref}, Options{Workers: workers}); err != nil {
						t.Fatal(err)
					}
					if _, err := Run(context.Background(), readers, []*Pair{pair}, Options{Workers: workers, ReadAhead: 2}); err != nil {
						t.Fatal(err)
					}
					restore()
					what := fmt.Sprintf("blocking %v, %d workers", bl, workers)
					if !sameStats(pair.Stats, ref.Stats) {
						t.Errorf("%s:\n got %+v\nwant %+v (the decoded F32 pair)", what, pair.Stats, ref.Stats)
					}
					if want == "" {
						want = statsText(pair.Stats)
					} else if got := statsText(pair.Stats); got != want {
						t.Errorf("%s: %s, with 1 worker %s", what, got, want)
					}
					if first == nil {
						first = &pair.Stats
					} else if !sameStats(pair.Stats, *first) {
						t.Errorf("%s: %+v, with the first blocking %+v", what, pair.Stats, *first)
					}
					if n := decodes.Load(); tt.maxDecodes >= 0 && n > tt.maxDecodes {
						t.Errorf("%s: %d decodes, want at most %d", what, n, tt.maxDecodes)
					}
					if tt.check != nil {
						tt.check(t, pair.Stats)
					}
				}
			}
		})
	}
}

// pairSpec is what a test's Pair is made of (a Pair is not copied).
type pairSpec struct {
	Published, Exported Operand
	Tolerance           Tolerance
}

func (s pairSpec) new() *Pair {
	return &Pair{Published: s.Published, Exported: s.Exported, Tolerance: s.Tolerance}
}

// fp8Redecode recomputes x.decoded from its data and scales.
func fp8Redecode(t testing.TB, x fp8Tensor) fp8Tensor {
	t.Helper()
	d, mats := matrixDims(x.shape)
	per := d.Rows * d.Cols
	vals := make([]float32, len(x.data))
	for m := range mats {
		if err := (quant.ScaledFP8{}).Decode(d, 0, d.Rows, [][]byte{x.data[m*per : (m+1)*per], x.scale[4*m:]}, vals[m*per:(m+1)*per]); err != nil {
			t.Fatal(err)
		}
	}
	x.decoded = f32Of(vals)
	return x
}

// perturb moves every F32 value by one ulp.
func perturb(b []byte) []byte {
	out := append([]byte(nil), b...)
	for i := 0; i+3 < len(out); i += 4 {
		binary.LittleEndian.PutUint32(out[i:], binary.LittleEndian.Uint32(out[i:])^1)
	}
	return out
}

// bf16Of truncates F32 bytes to BF16.
func bf16Of(b []byte) []byte {
	out := make([]byte, 0, len(b)/2)
	for i := 0; i+3 < len(b); i += 4 {
		out = append(out, b[i+2], b[i+3])
	}
	return out
}

// TestCodecTileAlignment: a codec's blocks start on its tile and hold
// whole tiles (or run to the last row), whatever the block size asks.
func TestCodecTileAlignment(t *testing.T) {
	for _, tt := range []struct {
		rows, cols, tile, elems uint64
		want                    uint64 // rows a block
	}{
		{10, 4, 4, 12, 4},      // 3 rows asked, a tile of 4
		{10, 4, 4, 20, 8},      // 5 rows asked
		{10, 4, 4, 36, 10},     // 9 rows asked: rounding up passes the end
		{10, 4, 16, 4, 10},     // a tile taller than the matrix
		{10, 4, 1, 12, 3},      // no alignment needed
		{10, 1 << 20, 4, 1, 4}, // rows wider than a block: one tile
	} {
		var decodes atomic.Int64
		o := Operand{Shape: []uint64{tt.rows, tt.cols}, Codec: stubCodec{tileRows: tt.tile, decodes: &decodes}}
		p := &Pair{Published: o, Exported: Operand{DType: safetensors.F32, Shape: o.Shape}, codec: true}
		restore := SetBlocking(tt.elems, 0)
		b := newBlocking(p)
		restore()
		if b.perRows != tt.want || !b.byRows {
			t.Errorf("%d×%d, tile %d, %d elements a block: %d rows a block, want %d", tt.rows, tt.cols, tt.tile, tt.elems, b.perRows, tt.want)
		}
	}
}

// TestCodecOperandErrors: codec operands that do not fit their shape are
// errors before anything is read.
func TestCodecOperandErrors(t *testing.T) {
	x := Operand{Shape: []uint64{4, 4}, Codec: quant.ScaledFP8{}, Parts: [][]Segment{{{Length: 16}}, {{Offset: 16, Length: 4}}}}
	f32 := Operand{DType: safetensors.F32, Shape: []uint64{4, 4}, Segments: []Segment{{Offset: 20, Length: 64}}}
	short := x
	short.Parts = [][]Segment{{{Length: 15}}, {{Offset: 16, Length: 4}}}
	missing := x
	missing.Parts = x.Parts[:1]
	transposed := x
	transposed.Transposed = true
	c64 := Operand{DType: safetensors.C64, Shape: []uint64{4, 4}, Segments: []Segment{{Offset: 20, Length: 128}}}
	for _, tt := range []struct {
		name     string
		pub, exp Operand
		want     string
	}{
		{"short part", short, f32, "part 0 (data) holds 15 bytes"},
		{"missing part", missing, f32, "1 parts, the codec has 2"},
		{"transposed", transposed, f32, "transposed"},
		{"complex partner", x, c64, "not a dtype of real values"},
	} {
		readers := []io.ReaderAt{bytes.NewReader(make([]byte, 256))}
		_, err := Run(context.Background(), readers, []*Pair{{Published: tt.pub, Exported: tt.exp}}, Options{})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want %q", tt.name, err, tt.want)
		}
	}
}

// TestScaledFP8Vectors runs conformance-style vectors (known bytes and the
// values they mean) through the engine: each decodes to exactly its
// values, NaN for NaN.
func TestScaledFP8Vectors(t *testing.T) {
	half := f32Of([]float32{0.5})
	nan := float32(math.NaN())
	vectors := []quanttest.Vector{
		{Name: "ones and signs", Dims: quant.Dims{Rows: 2, Cols: 3},
			Parts: [][]byte{{0x38, 0xB8, 0x40, 0x00, 0x80, 0x48}, half},
			Want:  []float32{0.5, -0.5, 1, 0, float32(math.Copysign(0, -1)), 2}},
		{Name: "extremes", Dims: quant.Dims{Rows: 1, Cols: 4},
			Parts: [][]byte{{0x7E, 0xFE, 0x01, 0x7F}, half},
			Want:  []float32{224, -224, 0x1p-10, nan}},
		{Name: "rows past a block", Dims: quant.Dims{Rows: 5, Cols: 1},
			Parts: [][]byte{{0x30, 0x34, 0x38, 0x3C, 0x40}, f32Of([]float32{4})},
			Want:  []float32{2, 3, 4, 6, 8}},
	}
	defer SetBlocking(2, 0)()
	for _, v := range vectors {
		var f fileBuilder
		shape := []uint64{v.Dims.Rows, v.Dims.Cols}
		q := Operand{Shape: shape, Codec: quant.ScaledFP8{}, Parts: [][]Segment{f.add(v.Parts[0]), f.add(v.Parts[1])}}
		want := Operand{DType: safetensors.F32, Shape: shape, Segments: f.add(f32Of(v.Want))}
		p := &Pair{Published: want, Exported: q}
		if _, err := Run(context.Background(), []io.ReaderAt{bytes.NewReader(f.b)}, []*Pair{p}, Options{Workers: 2}); err != nil {
			t.Fatalf("%s: %v", v.Name, err)
		}
		if s := p.Stats; s.Mismatches != 0 || s.NonFiniteAt != nil || s.MaxAbsDiff != 0 || s.NonFinite != 0 {
			t.Errorf("%s: the engine's values are not the vector's: %+v", v.Name, s)
		}
	}
}
