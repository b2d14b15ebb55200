package ggufwrite

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
)

// TestQuantizersMatchGGML quantizes the inputs of quant/testdata/ggml/gen.c
// and compares the blocks with the ones ggml's own library wrote there, byte
// for byte. gen.c draws from one stream for all types in turn, so the test
// replays the types before each.
func TestQuantizersMatchGGML(t *testing.T) {
	kinds := []struct {
		name       string
		rows, cols int
		quantize   func([]byte, []float32) []byte
		block      int
	}{
		{"q4_0", 3, 96, nil, 32}, {"q4_1", 3, 96, nil, 32}, {"q5_0", 3, 96, nil, 32}, {"q5_1", 3, 96, nil, 32},
		{"q8_0", 3, 96, AppendQ8_0, Q8_0Values},
		{"q2_K", 2, 512, nil, 256}, {"q3_K", 2, 512, nil, 256},
		{"q4_K", 2, 512, AppendQ4K, Q4KValues},
	}
	rng := newGenStream()
	for _, k := range kinds {
		src := rng.inputs(k.rows, k.cols, k.block)
		rng.skipRandom(t, k.name)
		if k.quantize == nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("..", "..", "quant", "testdata", "ggml", k.name+"_quantized.bin"))
		if err != nil {
			t.Fatal(err)
		}
		got := k.quantize(nil, src)
		if len(got) == 0 || len(b) < 8+len(got) {
			t.Fatalf("%s: %d bytes quantized, %d in ggml's file", k.name, len(got), len(b))
		}
		want := b[8 : 8+len(got)]
		if !bytes.Equal(got, want) {
			n := 0
			for i := range got {
				if got[i] != want[i] {
					n++
				}
			}
			t.Errorf("%s: %d of %d bytes differ from ggml's", k.name, n, len(got))
		}
	}
}

// genStream replays gen.c's random stream across its types.
type genStream struct{ s uint64 }

func newGenStream() *genStream { return &genStream{0x9E3779B97F4A7C15} }

func (g *genStream) next() uint32 {
	g.s ^= g.s >> 12
	g.s ^= g.s << 25
	g.s ^= g.s >> 27
	return uint32((g.s * 0x2545F4914F6CDD1D) >> 32)
}

func (g *genStream) inputs(rows, cols, block int) []float32 {
	src := make([]float32, rows*cols)
	for i := range src {
		scale := float32(300)
		switch i / cols {
		case 0:
			scale = 0.02
		case 1:
			scale = 1.5
		}
		src[i] = (float32(g.next()>>8)/16777216*2 - 1) * scale
		if g.next()%97 == 0 {
			src[i] *= 8
		}
	}
	for i := range block {
		src[i] = 0
	}
	return src
}

// skipRandom draws the random block bytes gen.c writes after each type's
// quantized vector (their count is the random file's).
func (g *genStream) skipRandom(t *testing.T, name string) {
	b, err := os.ReadFile(filepath.Join("..", "..", "quant", "testdata", "ggml", name+"_random.bin"))
	if err != nil {
		t.Fatal(err)
	}
	rows, cols := binary.LittleEndian.Uint32(b), binary.LittleEndian.Uint32(b[4:])
	for range len(b) - 8 - int(rows*cols)*4 {
		g.next()
	}
}
