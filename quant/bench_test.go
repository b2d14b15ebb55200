package quant_test

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/ckptcheck/ckptcheck/quant"
	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// BenchmarkDecode decodes a 1024 × 4096 weight in each encoding, in ranges
// of 128 rows (a block row of FP8) from the bytes their spans name, as a
// read plan feeds a codec, and reports ns per logical element; the BF16
// plain codec is the yardstick.
func BenchmarkDecode(b *testing.B) {
	const rows, cols = 1024, 4096
	d := quant.Dims{Rows: rows, Cols: cols}
	mk := func(c quant.Codec, err error) quant.Codec {
		if err != nil {
			b.Fatal(err)
		}
		return c
	}
	bf16, _ := quant.Plain(tensorfile.BF16)
	codecs := []quant.Codec{
		bf16,
		mk(quant.NewBlockFP8(128, 128)),
		mk(quant.NewChannelFP8(tensorfile.BF16, false)),
		mk(quant.NewGPTQ(quant.GPTQConfig{Bits: 4, GroupSize: 128, Scale: tensorfile.F16, ZeroOffset: 1, GIdx: true})),
		mk(quant.NewAWQ(128, tensorfile.F16)),
		mk(quant.NewPackQuantized(quant.PackQuantizedConfig{Bits: 4, GroupSize: 128, Scale: tensorfile.BF16})),
		mk(quant.NewMLXAffine(4, 64, tensorfile.BF16)),
		quant.MXFP4{},
		quant.NVFP4ModelOpt,
		quant.NVFP4CompressedTensors,
		mk(quant.NewBNB4(quant.BNB4Config{Blocksize: 64, DType: tensorfile.BF16, Nested: true, NestedBlocksize: 256, NestedOffset: 0.03})),
		quant.Int8Rowwise{},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range codecs {
		const step = 128
		ranges := benchRanges(b, c, d, step, rng)
		dst := make([]float32, step*cols)
		b.Run(c.String(), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for i, p := range ranges {
					r0 := uint64(i) * step
					if err := c.Decode(d, r0, r0+step, p, dst); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(rows*cols), "ns/elem")
		})
	}
}

// BenchmarkDecodeRange decodes values and steps of a 1024 × 4096 weight as
// the value engine's sub-chunked path asks for them: ranges of 128 rows,
// each in pieces of 16,384 values, and reports ns per logical element.
func BenchmarkDecodeRange(b *testing.B) {
	const rows, cols, step, piece = 1024, 4096, 128, 16384
	d := quant.Dims{Rows: rows, Cols: cols}
	type rangeDecoder interface {
		quant.Codec
		DecodeRange(d quant.Dims, r0, r1 uint64, parts [][]byte, lo, hi uint64, dst, steps []float32) error
	}
	mk := func(c quant.Codec, err error) rangeDecoder {
		if err != nil {
			b.Fatal(err)
		}
		rd, ok := c.(rangeDecoder)
		if !ok {
			b.Fatalf("%s decodes no ranges", c)
		}
		return rd
	}
	ggml := func(e tensorfile.Encoding) (quant.Codec, error) {
		c, _ := quant.GGML(e)
		return c, nil
	}
	codecs := []rangeDecoder{
		mk(quant.NewBlockFP8(128, 128)),
		mk(quant.NewGPTQ(quant.GPTQConfig{Bits: 4, GroupSize: 128, Scale: tensorfile.F16, ZeroOffset: 1, GIdx: true})),
		mk(ggml(tensorfile.Q8_0)),
		mk(ggml(tensorfile.Q4_K)),
		mk(ggml(tensorfile.Q4_0)),
		mk(ggml(tensorfile.Q5_K)),
		mk(ggml(tensorfile.Q6_K)),
		mk(ggml(tensorfile.MXFP4)),
	}
	awq, _ := quant.NewAWQ(128, tensorfile.F16)
	pack, _ := quant.NewPackQuantized(quant.PackQuantizedConfig{Bits: 4, GroupSize: 128, Scale: tensorfile.BF16})
	mlx, _ := quant.NewMLXAffine(4, 64, tensorfile.BF16)
	for _, c := range []quant.Codec{awq, pack, mlx} { // those that decode ranges
		if rd, ok := c.(rangeDecoder); ok {
			codecs = append(codecs, rd)
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range codecs {
		b.Run(c.String(), func(b *testing.B) {
			ranges := benchRanges(b, c, d, step, rng)
			vals, steps := make([]float32, piece), make([]float32, piece)
			b.ReportAllocs()
			for b.Loop() {
				for i, p := range ranges {
					r0 := uint64(i) * step
					for lo := uint64(0); lo < step*cols; lo += piece {
						if err := c.DecodeRange(d, r0, r0+step, p, lo, lo+piece, vals, steps); err != nil {
							b.Fatal(err)
						}
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(rows*cols), "ns/elem")
		})
	}
}

// benchRanges makes random parts of a weight of d in c's encoding (finite
// scales, a g_idx in column order) and gathers them for each range of
// step rows.
func benchRanges(b *testing.B, c quant.Codec, d quant.Dims, step uint64, rng *rand.Rand) [][][]byte {
	sizes := make([]uint64, len(c.Parts()))
	if err := c.Sizes(d, sizes); err != nil {
		b.Fatal(err)
	}
	parts := make([][]byte, len(sizes))
	for i, s := range sizes {
		parts[i] = make([]byte, s)
		for j := range parts[i] {
			parts[i][j] = byte(rng.UintN(256)) & 0x77
		}
		if p := c.Parts()[i]; p.Role == quant.Scale && p.DType == tensorfile.F16 {
			for j := 0; j+2 <= len(parts[i]); j += 2 { // normal scales of 2^-10 to 2^-6, as exports have
				binary.LittleEndian.PutUint16(parts[i][j:], uint16(0x1400+rng.UintN(0x1000)))
			}
		}
		if p := c.Parts()[i]; p.Role == quant.Scale && p.DType == tensorfile.F32 {
			for j := 0; j+4 <= len(parts[i]); j += 4 { // normal scales of 2^-14 to 2^-6: random bits would make subnormal products, which no export has and which cost the CPU many cycles each
				binary.LittleEndian.PutUint32(parts[i][j:], 0x38800000+rng.Uint32N(0x4000000))
			}
		}
		if c.Parts()[i].Role == quant.Index {
			clear(parts[i])
			for col := range d.Cols {
				parts[i][4*col] = byte(col / 128)
			}
		}
	}
	var ranges [][][]byte
	for r0 := uint64(0); r0 < d.Rows; r0 += step {
		spans, err := c.Spans(d, r0, r0+step, nil)
		if err != nil {
			b.Fatal(err)
		}
		g, err := quant.Gather(parts, spans, nil)
		if err != nil {
			b.Fatal(err)
		}
		ranges = append(ranges, g)
	}
	return ranges
}

// BenchmarkDecodeFloat64 decodes 16,384 values of the dtypes the kernels
// widen to float64 (the published BF16 side, a codec's F32 values).
func BenchmarkDecodeFloat64(b *testing.B) {
	const n = 16384
	rng := rand.New(rand.NewPCG(5, 6))
	src := make([]byte, 4*n)
	for i := range src {
		src[i] = byte(rng.UintN(256)) & 0x77
	}
	dst := make([]float64, n)
	for _, dt := range []tensorfile.DType{tensorfile.BF16, tensorfile.F16, tensorfile.F32} {
		b.Run(dt.String(), func(b *testing.B) {
			for b.Loop() {
				quant.DecodeFloat64(dt, src[:n*dt.Bits()/8], dst)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/elem")
		})
	}
}
