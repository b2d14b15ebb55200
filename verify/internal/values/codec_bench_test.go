package values

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/ckptcheck/ckptcheck/quant"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// BenchmarkRunScaledFP8 times a whole Run of a ScaledFP8 weight against an
// F32 export that differs everywhere by an ulp, finite values (every block decoded and
// measured), one worker, bytes in memory; beside it, the same export
// against its decoded F32 values, for the cost of decoding. ns/elem is a
// logical element.
func BenchmarkRunScaledFP8(b *testing.B) {
	shape := []uint64{1024, 2048}
	x := newFP8Tensor(b, shape, 9)
	for i, c := range x.data { // finite values: NaNs send chunks the slow way
		if c&0x7F == 0x7F {
			x.data[i] = 0x38
		}
	}
	x = fp8Redecode(b, x)
	var f fileBuilder
	q := Operand{Shape: shape, Codec: quant.ScaledFP8{}, Parts: [][]Segment{f.add(x.data), f.add(x.scale)}}
	dec := Operand{DType: safetensors.F32, Shape: shape, Segments: f.add(x.decoded)}
	exp := Operand{DType: safetensors.F32, Shape: shape, Segments: f.add(perturb(x.decoded))}
	readers := []io.ReaderAt{bytes.NewReader(f.b)}
	n := float64(len(x.data))
	for _, bb := range []struct {
		name string
		pub  Operand
	}{{"ScaledFP8-F32", q}, {"F32-F32", dec}} {
		b.Run(bb.name, func(b *testing.B) {
			p := &Pair{Published: bb.pub, Exported: exp, Tolerance: Tolerance{Rtol: 1e-3}}
			b.SetBytes(int64(bb.pub.Size() + exp.Size()))
			for b.Loop() {
				if _, err := Run(context.Background(), readers, []*Pair{p}, Options{Workers: 1}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/elem")
		})
	}
}
