package values

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ckptcheck/ckptcheck/safetensors"
)

// measureReference is the step measure by its definition, in float64, one
// element at a time.
func measureReference(pv, ev []float32, steps [2][]float32, start uint64) stepPartial {
	var sp stepPartial
	for i := range pv {
		half := 0.0
		for _, s := range steps {
			if s != nil {
				half += float64(s[i]) / 2
				sp.sumStep2 += float64(s[i]) * float64(s[i])
			}
		}
		a, b := float64(pv[i]), float64(ev[i])
		if math.IsNaN(a) || math.IsNaN(b) || math.IsInf(a, 0) || math.IsInf(b, 0) {
			continue
		}
		sp.sumP2 += a * a
		dlt := math.Abs(b - a)
		if dlt > (1+StepMargin)*half {
			sp.outside++
		}
		r := dlt / half
		if dlt == 0 {
			r = 0
		}
		if !sp.hasMax || r > sp.maxRatio {
			sp.maxRatio, sp.maxIdx, sp.hasMax = r, start+uint64(i), true
		}
	}
	return sp
}

// TestMeasureSteps checks the step loops against measureReference on
// values near their steps, with zero steps, equal values, NaNs and
// infinities, on one side's steps and on both.
func TestMeasureSteps(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		n := 1 + rng.IntN(300)
		pv, ev := make([]float32, n), make([]float32, n)
		steps := [2][]float32{make([]float32, n), make([]float32, n)}
		for i := range n {
			pv[i] = float32(rng.NormFloat64())
			s := float32(math.Ldexp(1, -rng.IntN(8)))
			steps[0][i], steps[1][i] = s, s/2
			ev[i] = pv[i] + s*float32(rng.Float64()-0.5)*1.2
			switch rng.IntN(40) {
			case 0:
				steps[0][i], steps[1][i] = 0, 0
			case 1:
				ev[i] = pv[i]
			case 2:
				ev[i] = float32(math.NaN())
			case 3:
				pv[i] = float32(math.Inf(1 - 2*rng.IntN(2)))
			case 4:
				steps[0][i], steps[1][i] = 0, 0
				ev[i] = pv[i]
			}
		}
		if trial%7 == 0 { // no finite pair
			for i := range ev {
				ev[i] = float32(math.NaN())
			}
		}
		start := uint64(rng.IntN(1000))
		for _, c := range []struct {
			name  string
			steps [2][]float32
		}{{"published", [2][]float32{steps[0], nil}}, {"exported", [2][]float32{nil, steps[0]}}, {"both", steps}} {
			want := measureReference(pv, ev, c.steps, start)
			var got stepPartial
			switch {
			case c.steps[1] == nil:
				measureOneSide(&got, pv, ev, c.steps[0], start)
			case c.steps[0] == nil:
				measureOneSide(&got, pv, ev, c.steps[1], start)
			default:
				got.sumStep2 = sumSquares(c.steps[0]) + sumSquares(c.steps[1])
				measureBothSides(&got, pv, ev, c.steps[0], c.steps[1], start)
			}
			close := math.Abs(got.sumP2-want.sumP2) <= 1e-12*want.sumP2 && math.Abs(got.sumStep2-want.sumStep2) <= 1e-12*want.sumStep2
			got.sumP2, want.sumP2, got.sumStep2, want.sumStep2 = 0, 0, 0, 0
			if got != want || !close {
				t.Fatalf("trial %d, %s steps: got %+v, want %+v", trial, c.name, got, want)
			}
		}
	}
}

// TestMeasureVector checks the vector step loops against measureOneSide
// (the portable loop): the same numbers, bit for bit, on BF16 and F32
// sides, lengths that are not whole chunks or groups of four, with zero
// steps, NaNs and infinities.
func TestMeasureVector(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	pairs := [][2]safetensors.DType{{safetensors.F32, safetensors.F32}, {safetensors.BF16, safetensors.F32}, {safetensors.F32, safetensors.BF16}}
	tested := false
	for _, pe := range pairs {
		loop := vectorStepLoop(pe[0], pe[1])
		if loop == nil {
			continue
		}
		tested = true
		for trial := range 60 {
			n := 1 + rng.IntN(3*stepChunk)
			pv, ev, steps := make([]float32, n), make([]float32, n), make([]float32, n)
			for i := range n {
				pv[i] = float32(rng.NormFloat64())
				steps[i] = float32(math.Ldexp(1, -rng.IntN(8)))
				ev[i] = pv[i] + steps[i]*float32(rng.Float64()-0.5)*1.2
				switch rng.IntN(50) {
				case 0:
					steps[i] = 0
				case 1:
					ev[i] = pv[i]
				case 2:
					ev[i] = float32(math.NaN())
				case 3:
					pv[i] = float32(math.Inf(1 - 2*rng.IntN(2)))
				case 4:
					steps[i], ev[i] = 0, pv[i]
				case 5: // a NaN ratio is none: the largest stays
					steps[i] = float32(math.NaN())
				}
			}
			if trial%9 == 0 {
				for i := range ev {
					ev[i] = float32(math.NaN())
				}
			}
			pb, eb := encodeAs(pe[0], pv), encodeAs(pe[1], ev)
			// The values as the portable loop reads them.
			decodeFloat32(pe[0], pb, pv)
			decodeFloat32(pe[1], eb, ev)
			start := uint64(rng.IntN(100))
			var want, got stepPartial
			measureOneSide(&want, pv, ev, steps, start)
			measureVector(&got, loop, pe[0], pb, pe[1], eb, steps, start)
			if math.IsNaN(got.sumStep2) && math.IsNaN(want.sumStep2) { // of a NaN step
				got.sumStep2, want.sumStep2 = 0, 0
			}
			if got != want {
				t.Fatalf("%s-%s, trial %d (%d elements): vector %+v, portable %+v", pe[0], pe[1], trial, n, got, want)
			}
		}
	}
	if !tested {
		t.Skip("no vector step loop on this CPU")
	}
}

// encodeAs is vs as BF16 (truncated) or F32 bytes.
func encodeAs(d safetensors.DType, vs []float32) []byte {
	if d == safetensors.BF16 {
		b := make([]byte, 2*len(vs))
		for i, v := range vs {
			binary.LittleEndian.PutUint16(b[2*i:], uint16(math.Float32bits(v)>>16))
		}
		return b
	}
	b := make([]byte, 4*len(vs))
	for i, v := range vs {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}
