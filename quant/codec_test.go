package quant_test

import (
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/x448/float16"

	"github.com/ckptcheck/ckptcheck/quant"
	"github.com/ckptcheck/ckptcheck/quant/quanttest"
	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// e4m3 is the OCP FP8 E4M3 ("fn") value of b, computed from the
// specification's definition in integers, independently of the package's
// decoder: bias 7, no infinities, S.1111.111 is NaN, and every value is an
// integer multiple of 2^-9 (the smallest subnormal).
func e4m3(b byte) float32 {
	exp, man := int(b>>3&0xF), int(b&7)
	if exp == 15 && man == 7 {
		return float32(math.NaN())
	}
	units := man // subnormal: man · 2^-9
	if exp > 0 {
		units = (8 + man) << (exp - 1) // (1 + man/8) · 2^(exp-7) = (8+man)·2^(exp-1) · 2^-9
	}
	v := float32(units) / 512
	if b&0x80 != 0 {
		v = -v
	}
	return v
}

func TestE4M3Spec(t *testing.T) {
	for _, tt := range []struct {
		b    byte
		want float32
	}{{0x7E, 448}, {0x08, 1.0 / 64}, {0x01, 1.0 / 512}, {0x38, 1}, {0xB8, -1}, {0x80, float32(math.Copysign(0, -1))}} {
		if got := e4m3(tt.b); math.Float32bits(got) != math.Float32bits(tt.want) {
			t.Errorf("e4m3(%#02x) = %v, want %v", tt.b, got, tt.want)
		}
	}
}

func TestScaledFP8(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var vectors []quanttest.Vector
	// All 256 bytes under a few scales, and ragged shapes.
	for _, scale := range []float32{1, 0.0123, -3.5, float32(math.Inf(1)), 0} {
		data := make([]byte, 256)
		want := make([]float32, 256)
		for b := range data {
			data[b] = byte(b)
			want[b] = e4m3(byte(b)) * scale
		}
		vectors = append(vectors, quanttest.Vector{Name: "all bytes", Dims: quant.Dims{Rows: 16, Cols: 16}, Parts: [][]byte{data, f32(scale)}, Want: want})
	}
	for _, d := range []quant.Dims{{Rows: 7, Cols: 13}, {Rows: 1, Cols: 1}, {Rows: 3, Cols: 0}, {Rows: 129, Cols: 5}} {
		n := d.Rows * d.Cols
		data, want := make([]byte, n), make([]float32, n)
		scale := rng.Float32()
		for i := range data {
			data[i] = byte(rng.UintN(256))
			want[i] = e4m3(data[i]) * scale
		}
		vectors = append(vectors, quanttest.Vector{Name: "ragged", Dims: d, Parts: [][]byte{data, f32(scale)}, Want: want})
	}
	quanttest.TestCodec(t, quant.ScaledFP8{}, vectors)
}

func f32(v float32) []byte { return binary.LittleEndian.AppendUint32(nil, math.Float32bits(v)) }

// plainValues decodes one element of d from its specification, with no
// code from package quant: IEEE formats through the standard library and
// x448/float16, integers through encoding/binary, F8 through e4m3 and the
// decoders' published special values.
func plainValues(d tensorfile.DType, b []byte) []float32 {
	le := binary.LittleEndian
	switch d {
	case tensorfile.F32:
		return []float32{math.Float32frombits(le.Uint32(b))}
	case tensorfile.C64:
		return []float32{math.Float32frombits(le.Uint32(b)), math.Float32frombits(le.Uint32(b[4:]))}
	case tensorfile.F64:
		return []float32{float32(math.Float64frombits(le.Uint64(b)))}
	case tensorfile.BF16:
		return []float32{math.Float32frombits(uint32(le.Uint16(b)) << 16)}
	case tensorfile.F16:
		return []float32{float16.Frombits(le.Uint16(b)).Float32()}
	case tensorfile.F8_E4M3:
		return []float32{e4m3(b[0])}
	case tensorfile.BOOL, tensorfile.U8:
		return []float32{float32(b[0])}
	case tensorfile.I8:
		return []float32{float32(int8(b[0]))}
	case tensorfile.I16:
		return []float32{float32(int16(le.Uint16(b)))}
	case tensorfile.U16:
		return []float32{float32(le.Uint16(b))}
	case tensorfile.I32:
		return []float32{float32(float64(int32(le.Uint32(b))))}
	case tensorfile.U32:
		return []float32{float32(float64(le.Uint32(b)))}
	case tensorfile.I64:
		return []float32{float32(float64(int64(le.Uint64(b))))}
	case tensorfile.U64:
		return []float32{float32(float64(le.Uint64(b)))}
	}
	return nil
}

// TestPlainCodecs runs the suite on every decodable plain dtype. The 8-bit
// floats other than E4M3 are checked against DecodeFloat64 itself, which
// TestF8SpecialValues pins to their specifications; here the codec wrapping
// is what is under test.
func TestPlainCodecs(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, d := range tensorfile.DTypes() {
		c, ok := quant.Plain(d)
		if ok != d.Decodable() {
			t.Errorf("Plain(%s) = %v, want %v", d, ok, d.Decodable())
		}
		if !ok {
			continue
		}
		t.Run(d.String(), func(t *testing.T) {
			size, lanes := d.Bits()/8, uint64(d.Lanes())
			var vectors []quanttest.Vector
			for _, dims := range []quant.Dims{{Rows: 5, Cols: 6}, {Rows: 1, Cols: 2}, {Rows: 600, Cols: 2}, {Rows: 2, Cols: 0}} {
				elems := dims.Rows * dims.Cols / lanes
				data := make([]byte, int(elems)*size)
				for i := range data {
					data[i] = byte(rng.UintN(256))
				}
				if d == tensorfile.BOOL {
					for i := range data {
						data[i] &= 1
					}
				}
				var want []float32
				for i := range int(elems) {
					if v := plainValues(d, data[i*size:]); v != nil {
						want = append(want, v...)
					} else {
						f := make([]float64, 1)
						quant.DecodeFloat64(d, data[i*size:(i+1)*size], f)
						want = append(want, float32(f[0]))
					}
				}
				vectors = append(vectors, quanttest.Vector{Name: "random", Dims: dims, Parts: [][]byte{data}, Want: want})
			}
			quanttest.TestCodec(t, c, vectors)
		})
	}
}

func TestSpanEnd(t *testing.T) {
	tests := []struct {
		s    quant.Span
		end  uint64
		ok   bool
		size uint64
	}{
		{quant.Span{Offset: 10, Len: 4, Count: 1}, 14, true, 4},
		{quant.Span{Offset: 10, Len: 4, Stride: 100, Count: 3}, 214, true, 12},
		{quant.Span{Offset: 10}, 10, true, 0},
		{quant.Span{Offset: 1, Len: 1, Stride: math.MaxUint64, Count: 2}, 0, false, 2},
		{quant.Span{Offset: math.MaxUint64, Len: 1, Count: 1}, 0, false, 1},
	}
	for _, tt := range tests {
		end, ok := tt.s.End()
		size, _ := tt.s.Size()
		if ok != tt.ok || (ok && end != tt.end) || size != tt.size {
			t.Errorf("%+v: End = %d, %v; Size = %d; want %d, %v, %d", tt.s, end, ok, size, tt.end, tt.ok, tt.size)
		}
	}
}

func TestGatherRefusesOutOfRange(t *testing.T) {
	full := [][]byte{make([]byte, 8)}
	for _, s := range []quant.Span{{Part: 1, Len: 1, Count: 1}, {Offset: 5, Len: 4, Count: 1}, {Len: 2, Stride: 4, Count: 3}} {
		if _, err := quant.Gather(full, []quant.Span{s}, nil); err == nil {
			t.Errorf("Gather(%+v): no error", s)
		}
	}
	got, err := quant.Gather(full, []quant.Span{{Offset: 1, Len: 2, Stride: 4, Count: 2}}, nil)
	if err != nil || len(got[0]) != 4 {
		t.Errorf("Gather = %v, %v", got, err)
	}
}

// FuzzCodecs feeds hostile dims, ranges and bytes to every codec: no panic,
// spans inside the parts, and Decode of what the spans name never fails on
// well-sized input.
func FuzzCodecs(f *testing.F) {
	f.Add(uint8(0), uint64(4), uint64(4), uint64(0), uint64(4), []byte("0123456789abcdef0123"))
	f.Add(uint8(1), uint64(math.MaxUint64), uint64(3), uint64(0), uint64(1), []byte{1, 2, 3})
	f.Add(uint8(18), uint64(2), uint64(4), uint64(1), uint64(2), make([]byte, 64))
	codecs := []quant.Codec{quant.ScaledFP8{}, quant.MXFP4{}, quant.NVFP4ModelOpt, quant.NVFP4CompressedTensors, quant.Int8Rowwise{}}
	for _, mk := range []func() (quant.Codec, error){
		func() (quant.Codec, error) { return quant.NewBlockFP8(128, 128) },
		func() (quant.Codec, error) { return quant.NewBlockFP8(3, 5) },
		func() (quant.Codec, error) { return quant.NewChannelFP8(tensorfile.BF16, false) },
		func() (quant.Codec, error) {
			return quant.NewBNB4(quant.BNB4Config{Blocksize: 64, DType: tensorfile.BF16, Nested: true, NestedBlocksize: 256})
		},
		func() (quant.Codec, error) {
			return quant.NewBNB4(quant.BNB4Config{FP4: true, Blocksize: 32, DType: tensorfile.F32})
		},
		func() (quant.Codec, error) {
			return quant.NewGPTQ(quant.GPTQConfig{Bits: 4, GroupSize: 16, Scale: tensorfile.F16, ZeroOffset: 1, GIdx: true})
		},
		func() (quant.Codec, error) { return quant.NewAWQ(16, tensorfile.F16) },
		func() (quant.Codec, error) {
			return quant.NewPackQuantized(quant.PackQuantizedConfig{Bits: 4, GroupSize: 8, Scale: tensorfile.BF16, Asymmetric: true, GIdx: true})
		},
		func() (quant.Codec, error) { return quant.NewMLXAffine(4, 32, tensorfile.BF16) },
	} {
		c, err := mk()
		if err != nil {
			f.Fatal(err)
		}
		codecs = append(codecs, c)
	}
	for _, d := range tensorfile.DTypes() {
		if c, ok := quant.Plain(d); ok {
			codecs = append(codecs, c)
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, rows, cols, r0, r1 uint64, data []byte) {
		c := codecs[int(which)%len(codecs)]
		d := quant.Dims{Rows: rows, Cols: cols}
		sizes := make([]uint64, len(c.Parts()))
		sizesErr := c.Sizes(d, sizes)
		spans, err := c.Spans(d, r0, r1, nil)
		if err != nil {
			return
		}
		if sizesErr != nil {
			t.Fatalf("Spans served %+v, which Sizes refused: %v", d, sizesErr)
		}
		full := make([][]byte, len(sizes))
		for i, s := range sizes {
			if s > uint64(len(data)) {
				full[i] = data
				continue
			}
			full[i] = data[:s]
		}
		parts, gerr := quant.Gather(full, spans, nil)
		n := (r1 - r0) * cols
		if n > 1<<16 {
			return
		}
		out := make([]float32, n)
		derr := c.Decode(d, r0, r1, parts, out)
		if gerr == nil && derr != nil && !errors.Is(derr, quant.ErrIndex) {
			t.Fatalf("Decode of the bytes its spans name: %v", derr)
		}
	})
}
