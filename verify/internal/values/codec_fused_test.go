package values

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ckptcheck/ckptcheck/safetensors"
)

// TestCodecLoop checks that the codec loops' one pass gives the numbers of
// the statistics kernel and the portable step loop, bit for bit (but a NaN
// Σs²'s payload), over pieces of every length, with and without NaNs,
// infinities, zero and NaN steps, and equal pairs, for each published
// dtype and kind of tolerance: the gated loop, the busy one, and the choice
// between them; the mirrored loops, for a codec on the published side
// (F32 decoded against BF16 or F16 exported); and the Go loop of the
// builds without the assembly.
func TestCodecLoop(t *testing.T) {
	f32 := safetensors.F32
	rng := rand.New(rand.NewPCG(7, 8))
	tested := false
	for _, dt := range [][2]safetensors.DType{{safetensors.BF16, f32}, {safetensors.F16, f32}, {f32, f32},
		{f32, safetensors.BF16}, {f32, safetensors.F16}} {
		pd, ed := dt[0], dt[1]
		for _, c := range []struct {
			tol  Tolerance
			mode string
		}{{Tolerance{}, "gated"}, {Tolerance{}, "busy"}, {Tolerance{}, "both"}, {Tolerance{Atol: 1e-3}, "both"},
			{Tolerance{Rtol: 1e-2, Atol: 1e-6}, "gated"}, {Tolerance{Rtol: 1e-2, Atol: 1e-6}, "busy"},
			{Tolerance{}, "go"}, {Tolerance{Atol: 1e-3}, "go"}, {Tolerance{Rtol: 1e-2, Atol: 1e-6}, "go"}} {
			gated, busy, mirror := codecStepLoops(pd, ed, c.tol)
			if c.mode == "go" { // the Go loop, which builds without the assembly take
				gated, mirror = goCodecLoop(pd, ed), false
				busy = gated
			}
			if gated == nil {
				continue
			}
			tested = true
			switch c.mode {
			case "gated":
				busy = gated
			case "busy":
				gated = busy
			}
			for _, n := range []int{4, 6, 100, 1023, 1024, 2048, 5003, 2*subChunkElems + 6} {
				for _, special := range []bool{false, true} {
					name := fmt.Sprintf("%s-%s/%+v/%s/%d/special=%v", pd, ed, c.tol, c.mode, n, special)
					pv, ev, steps := codecLoopCase(rng, n, special)
					pb, eb := encode(pd, pv), encode(ed, ev)
					pf, ef := make([]float32, n), make([]float32, n)
					decodeFloat32(pd, pb, pf)
					decodeFloat32(ed, eb, ef)
					psz, esz := pd.Bits()/8, ed.Bits()/8
					cut := min(n, subChunkElems)
					var got, want [2]string
					for i, fused := range []bool{false, true} {
						var k kernel
						var v vectorSteps
						var o oneSideSteps
						v.begin(nil, pd, ed, true)
						o.begin()
						k.begin(pd, ed, 0, uint64(n), c.tol)
						for _, r := range [][2]int{{0, cut}, {cut, n}} {
							p, e, s := pb[psz*r[0]:psz*r[1]], eb[esz*r[0]:esz*r[1]], steps[r[0]:r[1]]
							if !fused {
								o.add(pf[r[0]:r[1]], ef[r[0]:r[1]], s)
								k.add(p, e)
								continue
							}
							f := fusedSteps{v: &v, gated: gated, busy: busy, mirror: mirror, steps: s}
							k.steps = &f
							k.add(p, e)
							k.steps = nil
							v.done += len(s)
						}
						part := k.end(true)
						var sp stepPartial
						if fused {
							v.end(&sp, 0)
							sp.sumP2 = part.sumP2
						} else {
							o.end(&sp, 0)
						}
						bits := func(x float64) uint64 { return math.Float64bits(x) }
						if math.IsNaN(sp.sumStep2) {
							sp.sumStep2 = math.NaN()
						}
						got[i] = fmt.Sprintf("%+v sums %x %x %x %x %x %x", part, bits(part.sumAbs), bits(part.sumD2), bits(part.sumP2), bits(part.sumE2), bits(part.sumPE), bits(part.maxAbs))
						want[i] = fmt.Sprintf("%+v s2 %x p2 %x max %x", sp, bits(sp.sumStep2), bits(sp.sumP2), bits(sp.maxRatio))
					}
					if got[0] != got[1] {
						t.Errorf("%s: statistics\none pass  %s\ntwo       %s", name, got[1], got[0])
					}
					if want[0] != want[1] {
						t.Errorf("%s: steps\none pass  %s\ntwo       %s", name, want[1], want[0])
					}
				}
			}
		}
	}
	if !tested {
		t.Skip("no codec loop on this CPU")
	}
}

// codecLoopCase is n published values, values decoded near them (within
// half a step, or in some stretches beyond, and by turns beyond the
// largest ratio so far) and their steps; special adds
// NaNs, infinities, zero and NaN steps and equal pairs.
func codecLoopCase(rng *rand.Rand, n int, special bool) (pv, ev []float64, steps []float32) {
	pv, ev, steps = make([]float64, n), make([]float64, n), make([]float32, n)
	for i := range pv {
		pv[i] = rng.NormFloat64() / 16
		steps[i] = float32(math.Ldexp(1, -6-rng.IntN(4)))
		ev[i] = pv[i] + float64(steps[i])*(rng.Float64()-0.5)*float64(1+(i/700)%2)
		if i%97 == 0 { // a largest ratio that grows, in every group by turns
			ev[i] = pv[i] + float64(steps[i])*(0.5+float64(i)/float64(n))
		}
		if !special || rng.IntN(64) != 0 {
			continue
		}
		switch rng.IntN(8) {
		case 0:
			ev[i] = math.NaN()
		case 1:
			ev[i] = math.Inf(1 - 2*rng.IntN(2))
		case 2:
			pv[i] = math.Inf(1)
		case 3:
			steps[i] = 0
		case 4:
			steps[i] = float32(math.NaN())
		case 5: // equal in every dtype
			pv[i] = float64(math.Float32frombits(math.Float32bits(float32(pv[i])) &^ 0xFFFF))
			ev[i] = pv[i]
		case 6: // no codec writes one; the gate must still look closer
			steps[i] = -steps[i]
		case 7:
			steps[i] = float32(math.Inf(1 - 2*rng.IntN(2)))
		}
	}
	return pv, ev, steps
}
