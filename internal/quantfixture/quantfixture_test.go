package quantfixture

import (
	"math"
	"testing"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/quant"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// e4m3Values are the F8_E4M3 values by code, from the quant package's table.
func e4m3Values() [256]float64 {
	var v [256]float64
	var codes [256]byte
	for i := range codes {
		codes[i] = byte(i)
	}
	quant.DecodeFloat64(safetensors.F8_E4M3, codes[:], v[:])
	return v
}

// TestE4M3 checks E4M3 against the nearest code by search (ties to the even
// code) on every code, every midpoint and points between them.
func TestE4M3(t *testing.T) {
	vals := e4m3Values()
	nearest := func(x float64) byte {
		best, bestD := byte(0), math.Inf(1)
		for c := range 256 {
			v := vals[c]
			if math.IsNaN(v) || (v == 0 && math.Signbit(v) != math.Signbit(x)) {
				continue
			}
			d := math.Abs(v - x)
			if d < bestD || (d == bestD && c&1 == 0 && best&1 == 1) {
				best, bestD = byte(c), d
			}
		}
		return best
	}
	var xs []float64
	for c := range 126 { // 0x7F is NaN
		a, b := vals[c], vals[c+1]
		xs = append(xs, a, (a+b)/2, a+(b-a)/4, a+3*(b-a)/4)
	}
	xs = append(xs, 448, 1e-9, 2e-3)
	for _, x := range xs {
		for _, s := range []float64{1, -1} {
			if got, want := E4M3(float32(s*x)), nearest(s*x); got != want {
				t.Errorf("E4M3(%g) = %#x (%g), want %#x (%g)", s*x, got, vals[got], want, vals[want])
			}
		}
	}
	if got := E4M3(float32(math.NaN())); !math.IsNaN(vals[got]) {
		t.Errorf("E4M3(NaN) = %#x", got)
	}
}

// weights is a BF16 tensor of fixture's random weights.
func weights(rows, cols uint64) fixture.Tensor {
	return fixture.Tiny.Tensor(fixture.Spec{Name: "model.layers.0.mlp.up_proj.weight", Shape: []uint64{rows, cols}}, safetensors.BF16)
}

// decoded is the quantized tensors decoded by codec, the parts in its order.
func decoded(t *testing.T, codec quant.Codec, rows, cols uint64, parts ...fixture.Tensor) []float32 {
	t.Helper()
	bs := make([][]byte, len(parts))
	for i, p := range parts {
		bs[i] = p.Data
	}
	dst := make([]float32, rows*cols)
	if err := codec.Decode(quant.Dims{Rows: rows, Cols: cols}, 0, rows, bs, dst); err != nil {
		t.Fatal(err)
	}
	return dst
}

// within checks that every decoded value is within half a step of the
// source, the step given per element.
func within(t *testing.T, src fixture.Tensor, got []float32, step func(i int) float64) {
	t.Helper()
	want := floats(src)
	bad := 0
	for i, v := range want {
		if d := math.Abs(float64(got[i] - v)); d > step(i)/2*(1+1.0/16) {
			if bad++; bad < 5 {
				t.Errorf("element %d: %g decoded as %g, step %g", i, v, got[i], step(i))
			}
		}
	}
}

func TestBlockFP8(t *testing.T) {
	const rows, cols = 40, 72 // blocks of 16 that do not divide the shape
	src := weights(rows, cols)
	z := BlockFP8{Rows: 16, Cols: 16}
	out := z.Quantize(src)
	for i, info := range z.Layout(fixture.Spec{Name: src.Name, Shape: src.Shape}) {
		if out[i].Name != info.Name || out[i].DType != info.DType {
			t.Fatalf("part %d: %s %s, layout %s %s", i, out[i].Name, out[i].DType, info.Name, info.DType)
		}
	}
	codec, err := quant.NewBlockFP8(16, 16)
	if err != nil {
		t.Fatal(err)
	}
	got := decoded(t, codec, rows, cols, out...)
	scaleInv := floats(out[1])
	within(t, src, got, func(i int) float64 {
		r, c := i/cols, i%cols
		s := float64(scaleInv[r/16*5+c/16])
		// The E4M3 grid's spacing at the value: 2^(e−3), subnormals 2^-9.
		x := math.Abs(float64(got[i])) / s
		_, e := math.Frexp(max(x, 1.0/64))
		return s * math.Ldexp(1, e-4)
	})
	doubled := decoded(t, codec, rows, cols, BlockFP8{Rows: 16, Cols: 16, Mult: 2}.Quantize(src)...)
	for i := range doubled {
		if got[i] != 0 && doubled[i] != 2*got[i] {
			t.Fatalf("Mult 2: element %d is %g, faithful %g", i, doubled[i], got[i])
		}
	}
}

func TestGPTQ(t *testing.T) {
	const rows, cols, group = 24, 192, 64
	src := weights(rows, cols)
	for _, z := range []GPTQ{{Bits: 4, Group: group}, {Bits: 4, Group: group, Asym: true, V2: true}} {
		out := z.Quantize(src)
		offset := int32(1)
		if z.V2 {
			offset = 0
		}
		codec, err := quant.NewGPTQ(quant.GPTQConfig{Bits: 4, GroupSize: group, Scale: safetensors.F16, ZeroOffset: offset, GIdx: true})
		if err != nil {
			t.Fatal(err)
		}
		// The codec's parts: qweight, scales, qzeros, g_idx.
		got := decoded(t, codec, rows, cols, out[0], out[2], out[1], out[3])
		scales := make([]float64, len(out[2].Data)/2)
		quant.DecodeFloat64(safetensors.F16, out[2].Data, scales)
		within(t, src, got, func(i int) float64 {
			// Half a step, plus the F16 store of the product.
			s := scales[(i%cols)/group*rows+i/cols]
			return s + 2*math.Abs(float64(got[i]))/2048
		})
	}
}

// TestWriteExport writes a small model's exports and reads them back.
func TestWriteExport(t *testing.T) {
	q := fixture.Qwen3{Vocab: 256, Hidden: 128, Layers: 1, Heads: 2, KVHeads: 1, HeadDim: 64, Intermediate: 256, Tied: true, Seed: 3}
	for _, z := range []Quantizer{BlockFP8{Rows: 128, Cols: 128}, GPTQ{Bits: 4, Group: 128}} {
		dir := t.TempDir()
		if err := WriteExport(dir, q, z, nil); err != nil {
			t.Fatal(err)
		}
		f, err := safetensors.Open(dir + "/model.safetensors")
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		for _, s := range q.Specs() {
			want := []safetensors.TensorInfo{{Name: s.Name, DType: safetensors.BF16, Shape: s.Shape}}
			if Linear(s) {
				want = z.Layout(s)
			}
			for _, w := range want {
				got := f.Tensor(w.Name)
				if got == nil || got.DType != w.DType {
					t.Errorf("%T: %s: %+v, want %s", z, w.Name, got, w.DType)
				}
			}
		}
	}
}
