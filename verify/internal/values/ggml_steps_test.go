package values

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/x448/float16"

	"github.com/ckptcheck/ckptcheck/quant"
	"github.com/ckptcheck/ckptcheck/safetensors"
	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// TestMeasureOneSided checks the one-sided step pass against the generic
// one (the portable loop bit for bit, the vector loop's sums to their last
// bits), on a Q8_0 side against BF16, F16 and F32 sides, either
// way round, with NaNs, infinities, equal values and zero steps among them.
func TestMeasureOneSided(t *testing.T) {
	codec, _ := quant.GGML(tensorfile.Q8_0)
	stepper := codec.(Stepper)
	const rows, cols = 3, 32 * 40
	d := quant.Dims{Rows: rows, Cols: cols}
	rng := rand.New(rand.NewPCG(25, 3))
	blocks := make([]byte, rows*cols/32*34)
	for i := range blocks {
		blocks[i] = byte(rng.IntN(256))
	}
	for b := 0; b < len(blocks); b += 34 {
		switch rng.IntN(8) {
		case 0:
			binary.LittleEndian.PutUint16(blocks[b:], 0) // a zero step
		case 1:
			binary.LittleEndian.PutUint16(blocks[b:], 0x7C00) // +Inf scale
		default:
			binary.LittleEndian.PutUint16(blocks[b:], 0x2000+uint16(rng.IntN(0x1000)))
		}
	}
	decoded := make([]float32, rows*cols)
	if err := codec.Decode(d, 0, rows, [][]byte{blocks}, decoded); err != nil {
		t.Fatal(err)
	}
	for _, dt := range []safetensors.DType{safetensors.BF16, safetensors.F16, safetensors.F32} {
		plain := make([]float32, len(decoded))
		for i, v := range decoded {
			switch rng.IntN(10) {
			case 0:
				plain[i] = v // equal
			case 1:
				plain[i] = float32(math.NaN())
			case 2:
				plain[i] = float32(math.Inf(-1))
			default:
				plain[i] = v + float32(rng.NormFloat64())*0.01*v
			}
		}
		plainBytes := encodeAs(plain, dt)
		for side := range 2 {
			t.Run(fmt.Sprintf("%s/codec-side-%d", dt, side), func(t *testing.T) {
				p := &Pair{}
				ops := [2]*Operand{&p.Published, &p.Exported}
				ops[side].Codec, ops[side].Shape = codec, []uint64{rows, cols}
				ops[1-side].DType, ops[1-side].Shape = dt, []uint64{rows, cols}
				p.stepper[side] = stepper
				var dc decoder
				dc.parts[side] = [][]byte{blocks[34*cols/32:]}
				raw := [2][]byte{}
				raw[side] = f32Of(decoded[cols:])
				raw[1-side] = plainBytes[len(plainBytes)/rows:]
				j := &job{pair: p, start: cols, n: 2 * cols}
				oneSided = false
				var generic stepBuffers
				want, err := generic.measure(j, &dc, raw[0], raw[1])
				oneSided = true
				if err != nil {
					t.Fatal(err)
				}
				for _, portable := range []bool{true, false} {
					restore := UseKernels(portable)
					var fast stepBuffers
					got, err := fast.measure(j, &dc, raw[0], raw[1])
					restore()
					if err != nil {
						t.Fatal(err)
					}
					if !sameSteps(got, want, portable) {
						t.Errorf("portable %v: one-sided %+v\ngeneric   %+v", portable, got, want)
					}
				}
				if want.outside == 0 || !want.hasMax {
					t.Errorf("a weak test: %+v", want)
				}
			})
		}
	}
}

// sameSteps reports whether a and b are equal, the sums in all but their
// last bits unless exact.
func sameSteps(a, b stepPartial, exact bool) bool {
	close := func(x, y float64) bool {
		return x == y || (x != x && y != y) || math.Abs(x-y) <= 1e-12*math.Max(math.Abs(x), math.Abs(y))
	}
	if !exact && close(a.sumStep2, b.sumStep2) && close(a.sumP2, b.sumP2) {
		a.sumStep2, a.sumP2 = b.sumStep2, b.sumP2
	}
	return fmt.Sprintf("%+v", a) == fmt.Sprintf("%+v", b)
}

// encodeAs is vals in dtype (BF16 by truncation, F16 to nearest).
func encodeAs(vals []float32, dt safetensors.DType) []byte {
	var b []byte
	for _, v := range vals {
		switch dt {
		case safetensors.BF16:
			b = binary.LittleEndian.AppendUint16(b, uint16(math.Float32bits(v)>>16))
		case safetensors.F16:
			b = binary.LittleEndian.AppendUint16(b, float16.Fromfloat32(v).Bits())
		default:
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
		}
	}
	return b
}
