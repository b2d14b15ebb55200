package values

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ckptcheck/ckptcheck/quant"
	"github.com/ckptcheck/ckptcheck/safetensors"
	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// TestShiftedPlain: an F32 tensor stored as w+1 (rounded to F32, as
// llama.cpp's converter stores Gemma's norms) compares through
// ShiftedPlain(F32, -1) within its steps against w; stored as w, every
// element is a step count away.
func TestShiftedPlain(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const rows, cols = 3, 40
	w := make([]float32, rows*cols)
	for i := range w {
		w[i] = float32(rng.NormFloat64() * 0.05)
	}
	w[0], w[1] = 1e-7, -3 // bits lost in w+1; a value whose shift changes binade
	plus := make([]float32, len(w))
	for i, v := range w {
		plus[i] = v + 1
	}
	c, ok := ShiftedPlain(safetensors.F32, -1)
	if !ok || c.String() != "F32, stored +1" {
		t.Fatalf("ShiftedPlain: %v %v", c, ok)
	}
	if _, ok := ShiftedPlain(safetensors.I32, -1); ok {
		t.Error("ShiftedPlain(I32): want not ok")
	}
	for _, tt := range []struct {
		name    string
		stored  []float32
		outside uint64
	}{{"w+1", plus, 0}, {"w", w, rows * cols}} {
		var f fileBuilder
		pub := Operand{DType: safetensors.F32, Shape: []uint64{rows, cols}, Segments: f.add(f32LE(w))}
		exp := Operand{Shape: []uint64{rows, cols}, Codec: c, Parts: [][]Segment{f.add(f32LE(tt.stored))}}
		p := &Pair{Name: "n", Published: pub, Exported: exp}
		if _, err := Run(context.Background(), []io.ReaderAt{bytes.NewReader(f.b)}, []*Pair{p}, Options{Workers: 2}); err != nil {
			t.Fatal(err)
		}
		s := p.Stats.Steps
		if s == nil || s.Outside != tt.outside {
			t.Errorf("%s: steps %+v, want %d outside (stats %+v)", tt.name, s, tt.outside, p.Stats)
		}
	}
}

// f32LE is vals as little-endian F32 bytes.
func f32LE(vals []float32) []byte {
	b := make([]byte, 0, 4*len(vals))
	for _, v := range vals {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return b
}

// TestShiftedCodec: a shifted GGML codec decodes what it decodes plus the
// shift, and states at least its steps.
func TestShiftedCodec(t *testing.T) {
	inner, ok := quant.GGML(tensorfile.Q8_0)
	if !ok {
		t.Fatal("no Q8_0 codec")
	}
	c := Shifted(inner, -1)
	st, ok := c.(Stepper)
	if !ok || c.String() != "ggml:Q8_0, stored +1" {
		t.Fatalf("Shifted(Q8_0): %v, stepper %v", c, ok)
	}
	d := quant.Dims{Rows: 1, Cols: 32}
	block := make([]byte, 34)
	block[0], block[1] = 0x00, 0x3c // d = 1.0 (F16)
	for i := range 32 {
		block[2+i] = byte(int8(i - 16))
	}
	a, b := make([]float32, 32), make([]float32, 32)
	parts := [][]byte{block}
	if err := inner.Decode(d, 0, 1, parts, a); err != nil {
		t.Fatal(err)
	}
	if err := c.Decode(d, 0, 1, parts, b); err != nil {
		t.Fatal(err)
	}
	sa, sb := make([]float32, 32), make([]float32, 32)
	if err := inner.(Stepper).Steps(d, 0, 1, parts, sa); err != nil {
		t.Fatal(err)
	}
	if err := st.Steps(d, 0, 1, parts, sb); err != nil {
		t.Fatal(err)
	}
	for i := range a {
		if b[i] != a[i]-1 || !(sb[i] >= sa[i]) || math.IsInf(float64(sb[i]), 0) {
			t.Fatalf("value %d: %v → %v, step %v → %v", i, a[i], b[i], sa[i], sb[i])
		}
	}
	if !IsShifted(c) || IsShifted(inner) {
		t.Error("IsShifted")
	}
}
