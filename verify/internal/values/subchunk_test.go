package values

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ckptcheck/ckptcheck/quant"
	"github.com/ckptcheck/ckptcheck/safetensors"
	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// subChunkCodecs are the RangeDecoders the sub-chunk tests run, with
// shapes of theirs (odd row counts, a last piece short of subChunkElems).
func subChunkCodecs(t testing.TB) []struct {
	name  string
	codec quant.Codec
	shape []uint64
} {
	fp8, err := quant.NewBlockFP8(128, 128)
	if err != nil {
		t.Fatal(err)
	}
	fp8small, err := quant.NewBlockFP8(3, 64)
	if err != nil {
		t.Fatal(err)
	}
	gptq, err := quant.NewGPTQ(quant.GPTQConfig{Bits: 4, GroupSize: 128, Scale: tensorfile.F16, ZeroOffset: 1, GIdx: true})
	if err != nil {
		t.Fatal(err)
	}
	gptq8, err := quant.NewGPTQ(quant.GPTQConfig{Bits: 8, GroupSize: 48, Scale: tensorfile.F16})
	if err != nil {
		t.Fatal(err)
	}
	ggml := func(e tensorfile.Encoding) quant.Codec {
		c, ok := quant.GGML(e)
		if !ok {
			t.Fatalf("no codec of %s", e)
		}
		return c
	}
	return []struct {
		name  string
		codec quant.Codec
		shape []uint64
	}{
		{"fp8block", fp8, []uint64{300, 512}},
		{"fp8block-3x64", fp8small, []uint64{2, 37, 320}},
		{"gptq4", gptq, []uint64{64, 1024}},
		{"gptq8-g48", gptq8, []uint64{40, 480}},
		{"q8_0", ggml(tensorfile.Q8_0), []uint64{41, 512}},
		{"q4_k", ggml(tensorfile.Q4_K), []uint64{37, 768}},
		{"q6_k", ggml(tensorfile.Q6_K), []uint64{3, 256}},
		{"q4_1", ggml(tensorfile.Q4_1), []uint64{53, 160}},
	}
}

// randomParts fills a codec's parts with random bytes (NaN and infinite
// scales among them), a valid g_idx for GPTQ, and returns them and their
// values.
func randomParts(t testing.TB, rng *rand.Rand, c quant.Codec, shape []uint64) ([][]byte, []float32) {
	d, matrices := matrixDims(shape)
	sizes := make([]uint64, len(c.Parts()))
	if err := c.Sizes(d, sizes); err != nil {
		t.Fatal(err)
	}
	parts := make([][]byte, len(sizes))
	for i, n := range sizes {
		b := make([]byte, n*matrices)
		for k := range b {
			b[k] = byte(rng.Uint32())
		}
		switch p := c.Parts()[i]; {
		case p.Role == quant.Index:
			for m := range matrices {
				for col := range d.Cols {
					binary.LittleEndian.PutUint32(b[m*n+4*col:], uint32(col/128))
				}
			}
		case p.DType == tensorfile.F32 && p.Role == quant.Scale:
			for k := 0; k+4 <= len(b); k += 4 {
				v := float32(math.Ldexp(rng.Float64()+0.5, -rng.IntN(12)))
				switch rng.IntN(60) {
				case 0:
					v = float32(math.NaN())
				case 1:
					v = float32(math.Inf(1))
				}
				binary.LittleEndian.PutUint32(b[k:], math.Float32bits(v))
			}
		}
		parts[i] = b
	}
	vals := make([]float32, d.Rows*d.Cols*matrices)
	for m := range matrices {
		mp := make([][]byte, len(parts))
		for i := range parts {
			mp[i] = parts[i][m*sizes[i] : (m+1)*sizes[i]]
		}
		if err := c.Decode(d, 0, d.Rows, mp, vals[m*d.Rows*d.Cols:(m+1)*d.Rows*d.Cols]); err != nil {
			t.Fatal(err)
		}
	}
	return parts, vals
}

// plainNear is vals moved a little, with NaNs and infinities here and
// there, as d.
func plainNear(rng *rand.Rand, d safetensors.DType, vals []float32) []byte {
	out := make([]float32, len(vals))
	for i, v := range vals {
		out[i] = v * float32(1+(rng.Float64()-0.5)/64)
		switch rng.IntN(500) {
		case 0:
			out[i] = float32(math.NaN())
		case 1:
			out[i] = float32(math.Inf(-1))
		case 2:
			out[i] = v
		}
	}
	return encodeAs(d, out)
}

// statsString is everything Stats says, NaNs and signed zeros included.
func statsString(s Stats) string {
	f := func(v float64) string { return fmt.Sprintf("%x", math.Float64bits(v)) }
	str := fmt.Sprintf("mis %d bit %v max %s at %v p %s e %s mean %s rel %s cos %s nf %d at %v const %v round %v",
		s.Mismatches, s.BitIdentical, f(s.MaxAbsDiff), s.MaxAt, f(s.PublishedAt), f(s.ExportedAt), f(s.MeanAbsDiff),
		f(s.RelL2), f(s.Cosine), s.NonFinite, s.NonFiniteAt, s.Constant, s.WithinRounding)
	if st := s.Steps; st != nil {
		str += fmt.Sprintf(" steps out %d max %s at %v noise %s", st.Outside, f(st.MaxRatio), st.MaxAt, f(st.NoiseRelL2))
	}
	// %v writes a float64 that reads back as its bits (the sums are of
	// finite pairs: no NaN).
	if c := s.Columns; c != nil {
		str += fmt.Sprint(" columns ", c.PP, c.EE, c.PE)
	}
	if r := s.Rows; r != nil {
		str += fmt.Sprint(" rows ", r.PP, r.EE, r.PE)
	}
	return str
}

// rowWeights are weights for the row sums of a tensor of cols columns,
// none exact in float32, so that the weighted products round.
func rowWeights(cols uint64) []float64 {
	w := make([]float64, cols)
	for j := range w {
		w[j] = 1 + float64(j)/3
	}
	return w
}

// TestSubChunked checks that the sub-chunked path gives the numbers of the
// whole-block path, bit for bit, on every RangeDecoder, the codec on
// either side, against BF16, F16 and F32, with the default and the
// portable kernels, blocks of many sizes and both kinds of tolerance, and
// with sums per column and row.
func TestSubChunked(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, c := range subChunkCodecs(t) {
		parts, vals := randomParts(t, rng, c.codec, c.shape)
		for _, pd := range []safetensors.DType{safetensors.BF16, safetensors.F16, safetensors.F32} {
			var f fileBuilder
			co := Operand{Shape: c.shape, Codec: c.codec}
			for _, b := range parts {
				co.Parts = append(co.Parts, f.add(b))
			}
			plain := Operand{DType: pd, Shape: c.shape, Segments: f.add(plainNear(rng, pd, vals))}
			exact := Operand{DType: safetensors.F32, Shape: c.shape, Segments: f.add(encodeAs(safetensors.F32, vals))}
			readers := []io.ReaderAt{bytes.NewReader(f.b)}
			for _, pair := range []struct {
				name     string
				pub, exp Operand
			}{{"plain-codec", plain, co}, {"codec-plain", co, plain}, {"exact", exact, co}} {
				if pair.name == "exact" && pd != safetensors.F32 {
					continue
				}
				for _, elems := range []uint64{0, 2 * subChunkElems, 3*subChunkElems + 2*chunkElems} {
					for _, tc := range []struct {
						portable, columns bool
						tol               Tolerance
					}{{false, false, Tolerance{Rtol: 1e-3, Atol: 1e-6}}, {true, false, Tolerance{Rtol: 1e-3, Atol: 1e-6}},
						{false, false, Tolerance{Atol: 1e-3}}, {false, true, Tolerance{Rtol: 1e-3, Atol: 1e-6}}} {
						portable := tc.portable
						name := fmt.Sprintf("%s/%s/%s/%d/portable=%v/columns=%v/%+v", c.name, pd, pair.name, elems, portable, tc.columns, tc.tol)
						got := make([]string, 2)
						for i, sub := range []bool{true, false} {
							restore := UseKernels(portable)
							restoreBlocks := SetBlocking(elems, 0)
							subChunking = sub
							p := &Pair{Published: pair.pub, Exported: pair.exp, Tolerance: tc.tol}
							if tc.columns {
								p.Columns, p.RowWeights = true, rowWeights(p.columnCount())
							}
							_, err := Run(context.Background(), readers, []*Pair{p}, Options{Workers: 2})
							subChunking = true
							restoreBlocks()
							restore()
							if err != nil {
								t.Fatalf("%s: %v", name, err)
							}
							got[i] = statsString(p.Stats)
						}
						if got[0] != got[1] {
							t.Errorf("%s:\nsub-chunked %s\nwhole       %s", name, got[0], got[1])
						}
					}
				}
			}
		}
	}
}

// TestSubChunkSide checks which pairs take the sub-chunked path.
func TestSubChunkSide(t *testing.T) {
	c := subChunkCodecs(t)[0]
	co := Operand{Shape: c.shape, Codec: c.codec}
	bf := Operand{DType: safetensors.BF16, Shape: c.shape}
	odd := Operand{Shape: []uint64{256, 200}, Codec: c.codec}
	for _, tc := range []struct {
		name string
		p    *Pair
		want int
	}{
		{"plain-codec", &Pair{Published: bf, Exported: co}, 1},
		{"codec-plain", &Pair{Published: co, Exported: bf}, 0},
		{"both codecs", &Pair{Published: co, Exported: co}, -1},
		{"columns", &Pair{Published: bf, Exported: co, Columns: true}, 1},
		{"I32 plain", &Pair{Published: Operand{DType: safetensors.I32, Shape: c.shape}, Exported: co}, -1},
		{"partial tile columns", &Pair{Published: bf, Exported: odd}, -1},
		{"own steps", &Pair{Published: bf, Exported: Operand{Shape: c.shape, Codec: c.codec, Steps: c.codec.(Stepper)}}, -1},
	} {
		if got := tc.p.subChunkSide(); got != tc.want {
			t.Errorf("%s: side %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestSubChunkedFinite is TestSubChunked where no value is a NaN or an
// infinity, so that no chunk is done again one element at a time and the
// codec loops' own numbers (the mirrored ones too, for the codec
// published) are those compared: FP8 blocks against BF16, F16 and F32,
// either side, tolerances of both kinds that a part of the elements
// passes (a large relative one: the elements that pass it by the
// published value and fail it by the exported one are many), with the
// codec loops and with the two passes.
func TestSubChunkedFinite(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	c := subChunkCodecs(t)[0]
	parts, _ := randomParts(t, rng, c.codec, c.shape)
	for k, b := range parts[0] { // no NaN among the E4M3 values, no scale not finite
		if b&0x7F == 0x7F {
			parts[0][k] = b ^ 1
		}
	}
	for k := 0; k+4 <= len(parts[1]); k += 4 {
		if s := math.Float32frombits(binary.LittleEndian.Uint32(parts[1][k:])); s-s != 0 {
			binary.LittleEndian.PutUint32(parts[1][k:], math.Float32bits(0.25))
		}
	}
	d, _ := matrixDims(c.shape)
	vals := make([]float32, d.Rows*d.Cols)
	if err := c.codec.Decode(d, 0, d.Rows, parts, vals); err != nil {
		t.Fatal(err)
	}
	near := make([]float32, len(vals)) // by stretches near the values, or far
	for i, v := range vals {
		near[i] = v * float32(1+(rng.Float64()-0.5)/float64(1+63*(i/700%2)))
	}
	for _, pd := range []safetensors.DType{safetensors.BF16, safetensors.F16, safetensors.F32} {
		var f fileBuilder
		co := Operand{Shape: c.shape, Codec: c.codec}
		for _, b := range parts {
			co.Parts = append(co.Parts, f.add(b))
		}
		plain := Operand{DType: pd, Shape: c.shape, Segments: f.add(encodeAs(pd, near))}
		readers := []io.ReaderAt{bytes.NewReader(f.b)}
		for _, pair := range []struct {
			name     string
			pub, exp Operand
		}{{"plain-codec", plain, co}, {"codec-plain", co, plain}} {
			for _, tol := range []Tolerance{{Rtol: 1.0 / 4}, {Rtol: 1.0 / 300}, {Atol: 1.0 / 1000}} {
				name := fmt.Sprintf("%s/%s/%+v", pd, pair.name, tol)
				var got [3]string
				for i, mode := range []struct{ sub, loops bool }{{false, false}, {true, false}, {true, true}} {
					subChunking, codecLoops = mode.sub, mode.loops
					p := &Pair{Published: pair.pub, Exported: pair.exp, Tolerance: tol}
					_, err := Run(context.Background(), readers, []*Pair{p}, Options{Workers: 2})
					subChunking, codecLoops = true, true
					if err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					if n := uint64(len(vals)); p.Stats.Mismatches == 0 || p.Stats.Mismatches == n || p.Stats.Steps == nil {
						t.Fatalf("%s: %d of %d elements outside the tolerance, steps %v", name, p.Stats.Mismatches, n, p.Stats.Steps)
					}
					got[i] = statsString(p.Stats)
				}
				if got[1] != got[0] || got[2] != got[0] {
					t.Errorf("%s:\nwhole       %s\ntwo passes  %s\ncodec loops %s", name, got[0], got[1], got[2])
				}
			}
		}
	}
}
