package values

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os/exec"
	"slices"
	"sort"
	"testing"

	"github.com/x448/float16"

	"github.com/ckptcheck/ckptcheck/quant"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// withKernels runs f with the given loops chosen.
func withKernels(m kernelMode, f func()) {
	old := kernelChoice
	kernelChoice = m
	defer func() { kernelChoice = old }()
	f()
}

// oracle computes a block's statistics straight from their definitions:
// every value decoded, each finite pair added to lane i mod lanes in order,
// the lanes summed in a fixed order, the first element with the largest
// |d|, and integers compared exactly. The kernels must agree with it bit
// for bit.
func oracle(pd, ed safetensors.DType, p, e []byte, base, n uint64, tol Tolerance) partial {
	vl := uint64(pd.Lanes())
	pf, ef := make([]float64, n*vl), make([]float64, n*vl)
	quant.DecodeFloat64(pd, p, pf)
	quant.DecodeFloat64(ed, e, ef)
	r := partial{n: n, bitDiff: pd != ed || !bytes.Equal(p, e)}
	if n == 0 {
		return r
	}
	r.pFirst, r.eFirst, r.hasFirst = pf[0], ef[0], true
	var sum [5][lanes]float64
	var out uint64
	best := -1.0
	for i, pv := range pf {
		ev, l := ef[i], i%lanes
		d := ev - pv
		if math.IsNaN(d) || math.IsInf(d, 0) {
			if !math.IsNaN(pv) && !math.IsInf(pv, 0) && (math.IsNaN(ev) || math.IsInf(ev, 0)) {
				r.nonfinite++
			}
			if ev != pv && !(math.IsNaN(pv) && math.IsNaN(ev)) {
				r.mismatches++
				if !r.hasNaN {
					r.hasNaN, r.nanIdx = true, base+uint64(i)/vl
				}
			}
			continue
		}
		ad := math.Abs(d)
		for s, v := range [5]float64{ad, float64(d * d), float64(pv * pv), float64(ev * ev), float64(pv * ev)} {
			sum[s][l] += v
		}
		if ad > tol.Atol+float64(tol.Rtol*math.Abs(pv)) {
			out++
		}
		if ad > best {
			best, r.maxIdx, r.maxP, r.maxE, r.hasMax = ad, base+uint64(i)/vl, pv, ev, true
		}
	}
	if r.hasMax {
		r.maxAbs = best
	}
	total := func(s [lanes]float64) float64 { return (s[0] + s[1]) + (s[2] + s[3]) }
	r.sumAbs, r.sumD2, r.sumP2, r.sumE2, r.sumPE = total(sum[0]), total(sum[1]), total(sum[2]), total(sum[3]), total(sum[4])
	psz, esz := uint64(pd.Bits()/8), uint64(ed.Bits()/8)
	for i := range n {
		r.pVaries = r.pVaries || !bytes.Equal(p[i*psz:(i+1)*psz], p[:psz])
		r.eVaries = r.eVaries || !bytes.Equal(e[i*esz:(i+1)*esz], e[:esz])
	}
	if pd.IsInteger() && ed.IsInteger() && tol == (Tolerance{}) {
		out = 0
		for i := range n {
			pn, pm := quant.DecodeInt(pd, p[i*psz:])
			en, em := quant.DecodeInt(ed, e[i*esz:])
			if pn != en || pm != em {
				out++
			}
		}
	}
	r.mismatches += out
	return r
}

// encode writes values as dtype d: floats rounded as a trainer would store
// them, 8-bit floats to the nearest finite code, integers truncated.
func encode(d safetensors.DType, vals []float64) []byte {
	size := d.Bits() / 8
	b := make([]byte, len(vals)*size/d.Lanes())
	var codes []code
	for i, v := range vals {
		switch d {
		case safetensors.BF16:
			binary.LittleEndian.PutUint16(b[2*i:], uint16(math.Float32bits(float32(v))>>16))
		case safetensors.F16:
			binary.LittleEndian.PutUint16(b[2*i:], float16.Fromfloat32(float32(v)).Bits())
		case safetensors.F32, safetensors.C64:
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(v)))
		case safetensors.F64:
			binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(v))
		case safetensors.I8, safetensors.U8, safetensors.BOOL, safetensors.I16, safetensors.U16,
			safetensors.I32, safetensors.U32, safetensors.I64, safetensors.U64:
			x := uint64(int64(v * 100))
			if d == safetensors.BOOL {
				x &= 1
			}
			for j := range size {
				b[i*size+j] = byte(x >> (8 * j))
			}
		default: // 8-bit floats: the nearest finite code
			if codes == nil {
				codes = finiteCodes(d)
			}
			j := sort.Search(len(codes), func(j int) bool { return codes[j].v >= v })
			if j == len(codes) || (j > 0 && v-codes[j-1].v < codes[j].v-v) {
				j--
			}
			b[i] = codes[j].c
		}
	}
	return b
}

type code struct {
	v float64
	c byte
}

// finiteCodes lists an 8-bit float's finite values with their codes, in
// increasing order.
func finiteCodes(d safetensors.DType) []code {
	var out []code
	for c := range 256 {
		if v := decodeAt(d, []byte{byte(c)}, 0); !math.IsNaN(v) && !math.IsInf(v, 0) {
			out = append(out, code{v, byte(c)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].v < out[j].v })
	return out
}

// kernelCase makes a block of n elements for a pair of dtypes: published
// values of a trained layer's scale, the export moved a little (or not at
// all, or unrelated), and specials (NaN, ±Inf, ±0, subnormals, huge) at a
// few places when asked.
func kernelCase(pd, ed safetensors.DType, n int, seed uint64, specials bool) (p, e []byte) {
	rng := rand.New(rand.NewPCG(seed, uint64(pd)<<8|uint64(ed)))
	vl := pd.Lanes()
	pv, ev := make([]float64, n*vl), make([]float64, n*vl)
	for i := range pv {
		pv[i] = 0.02 * rng.NormFloat64()
		ev[i] = pv[i] * (1 + 1e-2*(2*rng.Float64()-1))
		if i%97 == 5 {
			ev[i] = pv[i] // some equal
		}
	}
	if specials && pd.IsFloat() && ed.IsFloat() {
		vals := []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), 1e-41, 3e38, -1e-7}
		for k := range 3 + n/500 {
			i := rng.IntN(len(pv))
			switch k % 3 {
			case 0:
				pv[i] = vals[rng.IntN(len(vals))]
			case 1:
				ev[i] = vals[rng.IntN(len(vals))]
			default:
				pv[i], ev[i] = vals[rng.IntN(len(vals))], vals[rng.IntN(len(vals))]
			}
		}
	}
	return encode(pd, pv), encode(ed, ev)
}

// comparablePairs lists every pair of dtypes whose values compare: the
// decodable ones, complex only with complex.
func comparablePairs() [][2]safetensors.DType {
	var out [][2]safetensors.DType
	for _, p := range safetensors.DTypes() {
		for _, e := range safetensors.DTypes() {
			if p.Decodable() && e.Decodable() && (p == e || p != safetensors.C64 && e != safetensors.C64) {
				out = append(out, [2]safetensors.DType{p, e})
			}
		}
	}
	return out
}

// TestKernelsAgree runs the vector loops (where this CPU has them), the
// portable loops and the reference path on every comparable pair of
// dtypes, at sizes around the chunk and vector steps, with and without
// specials, and checks each against the definitions bit for bit.
func TestKernelsAgree(t *testing.T) {
	tols := []Tolerance{{}, {Rtol: 1e-1}, {Atol: 1e-4, Rtol: 1e-3}}
	var k kernel
	for _, pe := range comparablePairs() {
		pd, ed := pe[0], pe[1]
		sizes := []int{1, 37, chunkElems + 21}
		if portableKernel(pd, ed) != nil {
			sizes = append(sizes, vectorStep, 2*chunkElems+3*vectorStep+5)
		}
		for _, n := range sizes {
			for _, specials := range []bool{false, true} {
				p, e := kernelCase(pd, ed, n, uint64(n), specials)
				tols := tols
				if n > chunkElems { // large blocks once (the race detector is slow)
					tols = tols[2:]
				}
				for ti, tol := range tols {
					name := fmt.Sprintf("%s/%s n=%d specials=%v tol=%d", pd, ed, n, specials, ti)
					want := fmt.Sprintf("%+v", oracle(pd, ed, p, e, 1000, uint64(n), tol))
					for _, m := range []kernelMode{kernelsAuto, kernelsPortable, kernelsReference} {
						var got partial
						withKernels(m, func() { got = k.compare(pd, ed, p, e, 1000, uint64(n), tol) })
						if g := fmt.Sprintf("%+v", got); g != want {
							t.Fatalf("%s, kernels %d:\n got %s\nwant %s", name, m, g, want)
						}
					}
				}
			}
		}
	}
}

// TestKernelsUnaligned: bytes that are not aligned to their elements go
// through decoded values, with the same results.
func TestKernelsUnaligned(t *testing.T) {
	var k kernel
	for _, pe := range [][2]safetensors.DType{{safetensors.BF16, safetensors.F32}, {safetensors.F16, safetensors.F16}} {
		p, e := kernelCase(pe[0], pe[1], 3000, 3, true)
		n := uint64(3000)
		want := fmt.Sprintf("%+v", k.compare(pe[0], pe[1], p, e, 0, n, Tolerance{Rtol: 1e-2}))
		up := append([]byte{0}, p...)[1:]
		ue := append([]byte{0}, e...)[1:]
		if got := fmt.Sprintf("%+v", k.compare(pe[0], pe[1], up, ue, 0, n, Tolerance{Rtol: 1e-2})); got != want {
			t.Errorf("%s/%s unaligned:\n got %s\nwant %s", pe[0], pe[1], got, want)
		}
	}
}

// TestLargestDifferenceFirst: ties for the largest |d| across lanes and
// chunks resolve to the first element that has it.
func TestLargestDifferenceFirst(t *testing.T) {
	n := 3 * chunkElems
	pv := make([]float64, n)
	ev := make([]float64, n)
	for i := range ev {
		ev[i] = 0.25
	}
	for _, at := range []int{n - 1, chunkElems + 3, chunkElems + 2, 7, 6} {
		ev[at] = 2 // every later tie is found first, then replaced
		for _, m := range []kernelMode{kernelsAuto, kernelsPortable, kernelsReference} {
			var r partial
			var k kernel
			withKernels(m, func() {
				r = k.compare(safetensors.F32, safetensors.F32, encode(safetensors.F32, pv), encode(safetensors.F32, ev), 10, uint64(n), Tolerance{})
			})
			if r.maxAbs != 2 || r.maxIdx != uint64(10+at) || r.maxE != 2 {
				t.Errorf("kernels %d, first 2 at %d: max %v at %d", m, at, r.maxAbs, r.maxIdx-10)
			}
		}
	}
}

func TestDiffers(t *testing.T) {
	for _, size := range []int{1, 2, 4, 8} {
		for n := 1; n < 20; n++ {
			b := make([]byte, n*size)
			for i := range n {
				copy(b[i*size:], []byte{1, 2, 3, 4, 5, 6, 7, 8}[:size])
			}
			if differs(b, repeatBytes(b[:size])) {
				t.Errorf("size %d n %d: equal elements differ", size, n)
			}
			for i := range b {
				b[i] ^= 0x10
				if !differs(b, repeatBytes(b[:size])) && i >= size {
					t.Errorf("size %d n %d: byte %d changed unnoticed", size, n, i)
				}
				b[i] ^= 0x10
			}
		}
	}
}

// TestVectorKernelsPresent: on a CPU with AVX2 the fused pairs have vector
// loops (so TestKernelsAgree compared them with the portable ones).
func TestVectorKernelsPresent(t *testing.T) {
	if vectorValuesKernel() == nil {
		t.Skip("no vector loops on this CPU or architecture: the portable loops are tested alone")
	}
	for _, pe := range [][2]safetensors.DType{{safetensors.BF16, safetensors.BF16}, {safetensors.BF16, safetensors.F32}, {safetensors.F32, safetensors.F32}} {
		if vectorKernel(pe[0], pe[1]) == nil {
			t.Errorf("%s/%s: no vector loop", pe[0], pe[1])
		}
	}
}

// TestGeneratedKernelsUpToDate: kernels_gen.go, kernels_gen_amd64.go,
// kernels_amd64.s and the codec_fused_gen_*.go loops are what
// ./internal/kernelgen writes.
func TestGeneratedKernelsUpToDate(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	out, err := exec.Command(goBin, "run", "./internal/kernelgen", "-check").CombinedOutput()
	if err != nil {
		t.Errorf("%v\n%s", err, out)
	}
}

// TestKernelsServeTransposedTiles: an export that stores a matrix
// transposed is read as tiles, transposed in memory and measured by the
// same loops. Its blocks are bands as wide as a tile allows, so they sum in
// another grouping than the plain blocks: the counts and the worst element
// are those of the same export stored untransposed, the sums equal to
// rounding.
func TestKernelsServeTransposedTiles(t *testing.T) {
	const rows, cols = 40, 16
	defer SetBlocking(4*cols, 0)()
	p, e := kernelCase(safetensors.BF16, safetensors.F32, rows*cols, 5, true)
	eT := make([]byte, len(e))
	transpose(eT, e, &tile{rows: rows, cols: cols, elem: 4})
	readers := []io.ReaderAt{bytes.NewReader(p), bytes.NewReader(e), bytes.NewReader(eT)}
	operand := func(dtype safetensors.DType, file, size int) Operand {
		return Operand{DType: dtype, Shape: []uint64{rows, cols}, Segments: []Segment{{File: file, Length: uint64(size)}}}
	}
	for _, m := range []kernelMode{kernelsAuto, kernelsPortable} {
		withKernels(m, func() {
			tol := Tolerance{Rtol: 1e-2}
			plain := &Pair{Published: operand(safetensors.BF16, 0, len(p)), Exported: operand(safetensors.F32, 1, len(e)), Tolerance: tol}
			tiled := &Pair{Published: operand(safetensors.BF16, 0, len(p)), Exported: operand(safetensors.F32, 2, len(eT)), Tolerance: tol}
			tiled.Exported.Transposed = true
			if _, err := Run(context.Background(), readers, []*Pair{plain, tiled}, Options{Workers: 2, ReadAhead: 2}); err != nil {
				t.Fatal(err)
			}
			if !tiled.blocks.byRows {
				t.Fatalf("blocking: tiled %+v", tiled.blocks)
			}
			g, w := tiled.Stats, plain.Stats
			close := func(a, b float64) bool { return math.Abs(a-b) <= 1e-12*math.Max(1, math.Abs(b)) }
			if g.Mismatches != w.Mismatches || w.Mismatches == 0 || g.MaxAbsDiff != w.MaxAbsDiff || !slices.Equal(g.MaxAt, w.MaxAt) ||
				g.NonFinite != w.NonFinite || !close(g.RelL2, w.RelL2) || !close(g.Cosine, w.Cosine) || !close(g.MeanAbsDiff, w.MeanAbsDiff) {
				t.Errorf("kernels %d: transposed export\n got %+v\nwant %+v", m, g, w)
			}
		})
	}
}

// TestF16UpcastExact: an F32 export that is the exact upcast of F16 values
// (every bit pattern, subnormals and specials included) is found exact
// without decoding; any changed bit is not.
func TestF16UpcastExact(t *testing.T) {
	p := make([]byte, 2<<16)
	e := make([]byte, 4<<16)
	for h := range 1 << 16 {
		binary.LittleEndian.PutUint16(p[2*h:], uint16(h))
		binary.LittleEndian.PutUint32(e[4*h:], math.Float32bits(quant.F16ToFloat32(uint16(h))))
	}
	if !exactBlock(safetensors.F16, safetensors.F32, p, e) {
		t.Fatal("the exact upcast of every F16 value must compare exact")
	}
	for _, at := range []int{0, 3, 4*0x3c00 + 1, len(e) - 1} {
		e[at] ^= 1
		if exactBlock(safetensors.F16, safetensors.F32, p, e) {
			t.Errorf("a flipped bit in byte %d went unnoticed", at)
		}
		e[at] ^= 1
	}
}

func TestBF16UpcastEqual(t *testing.T) {
	const n = 37 // words and a tail
	p := make([]byte, 2*n)
	for i := range n {
		binary.LittleEndian.PutUint16(p[2*i:], uint16(0x3F80+i*7))
	}
	e := make([]byte, 4*n)
	for i := range n {
		binary.LittleEndian.PutUint32(e[4*i:], uint32(binary.LittleEndian.Uint16(p[2*i:]))<<16)
	}
	if !bf16UpcastEqual(p, e) {
		t.Fatal("an exact upcast must compare equal")
	}
	for i := range 4 * n {
		e[i] ^= 1
		if bf16UpcastEqual(p, e) {
			t.Errorf("a flipped bit in byte %d went unnoticed", i)
		}
		e[i] ^= 1
	}
	// Unaligned slices take the bytewise path.
	if !bf16UpcastEqual(append([]byte{0}, p...)[1:], append([]byte{0}, e...)[1:]) {
		t.Error("unaligned exact upcast must compare equal")
	}
}

func TestRoundsTo(t *testing.T) {
	le := binary.LittleEndian
	bf := func(v ...uint16) []byte {
		var b []byte
		for _, x := range v {
			b = le.AppendUint16(b, x)
		}
		return b
	}
	f32 := func(v ...uint32) []byte {
		var b []byte
		for _, x := range v {
			b = le.AppendUint32(b, x)
		}
		return b
	}
	tests := []struct {
		p, e []byte
		ok   bool
	}{
		{bf(0x3F80), f32(0x3F80_0000), true},
		{bf(0x3F80), f32(0x3F80_7FFF), true},  // below the tie
		{bf(0x3F80), f32(0x3F80_8000), true},  // the tie, to even
		{bf(0x3F81), f32(0x3F81_8000), false}, // the tie, to even: 0x3F82
		{bf(0x3F80), f32(0x3F80_8001), false},
		{bf(0x7FC0), f32(0x7FC0_1234), true}, // NaN to NaN
		{bf(0x3F80), f32(0x7FC0_0000), false},
	}
	for _, tt := range tests {
		if got := roundsTo(safetensors.BF16, tt.p, tt.e); got != tt.ok {
			t.Errorf("%x vs %x: %v", tt.p, tt.e, got)
		}
	}
}
