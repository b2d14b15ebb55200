package values

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ckptcheck/ckptcheck/safetensors"
)

// TestCodecLoop checks that the codec loop's one pass gives the numbers of
// the statistics kernel and the lean step loop, bit for bit, over pieces
// of every length, with and without NaNs, infinities, zero and NaN steps,
// and equal pairs, for each kind of tolerance: the gated loop, the busy
// one, and the choice between them.
func TestCodecLoop(t *testing.T) {
	bf, f32 := safetensors.BF16, safetensors.F32
	lean := leanStepLoop(bf, f32)
	if g, _ := codecStepLoops(bf, f32, Tolerance{}); lean == nil || g == nil {
		t.Skip("no codec loop")
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for _, c := range []struct {
		tol  Tolerance
		mode string
	}{{Tolerance{}, "gated"}, {Tolerance{}, "busy"}, {Tolerance{}, "both"}, {Tolerance{Atol: 1e-3}, "both"},
		{Tolerance{Rtol: 1e-2, Atol: 1e-6}, "gated"}, {Tolerance{Rtol: 1e-2, Atol: 1e-6}, "busy"}} {
		tol := c.tol
		gated, busy := codecStepLoops(bf, f32, tol)
		switch c.mode {
		case "gated":
			busy = gated
		case "busy":
			gated = busy
		}
		for _, n := range []int{4, 6, 100, 1023, 1024, 2048, 5003, 2*subChunkElems + 6} {
			for _, special := range []bool{false, true} {
				name := fmt.Sprintf("%+v/%s/%d/special=%v", tol, c.mode, n, special)
				pv, ev, steps := make([]float32, n), make([]float32, n), make([]float32, n)
				for i := range pv {
					pv[i] = float32(rng.NormFloat64() / 16)
					steps[i] = float32(math.Ldexp(1, -6-rng.IntN(4)))
					// Within half a step, or (in some stretches) beyond.
					ev[i] = pv[i] + steps[i]*float32(rng.Float64()-0.5)*float32(1+(i/700)%2)
					if !special || rng.IntN(64) != 0 {
						continue
					}
					switch rng.IntN(6) {
					case 0:
						ev[i] = float32(math.NaN())
					case 1:
						ev[i] = float32(math.Inf(1 - 2*rng.IntN(2)))
					case 2:
						pv[i] = float32(math.Inf(1))
					case 3:
						steps[i] = 0
					case 4:
						steps[i] = float32(math.NaN())
					case 5:
						ev[i] = math.Float32frombits(math.Float32bits(pv[i]) &^ 0xFFFF)
					}
				}
				pb, eb := encodeAs(bf, pv), encodeAs(f32, ev)
				cut := min(n, subChunkElems)
				var got, want [2]string
				for i, fused := range []bool{false, true} {
					var k kernel
					var v vectorSteps
					v.begin(lean, bf, f32, true)
					k.begin(bf, f32, 0, uint64(n), tol)
					for _, r := range [][2]int{{0, cut}, {cut, n}} {
						p, e, s := pb[2*r[0]:2*r[1]], eb[4*r[0]:4*r[1]], steps[r[0]:r[1]]
						if !fused {
							v.add(p, e, s)
							k.add(p, e)
							continue
						}
						f := fusedSteps{v: &v, gated: gated, busy: busy, steps: s}
						k.steps = &f
						k.add(p, e)
						k.steps = nil
						v.done += len(s)
					}
					part := k.end(true)
					var sp stepPartial
					v.end(&sp, 0)
					sp.sumP2 = part.sumP2
					bits := func(x float64) uint64 { return math.Float64bits(x) }
					got[i] = fmt.Sprintf("%+v sums %x %x %x %x %x %x", part, bits(part.sumAbs), bits(part.sumD2), bits(part.sumP2), bits(part.sumE2), bits(part.sumPE), bits(part.maxAbs))
					want[i] = fmt.Sprintf("%+v s2 %x max %x", sp, bits(sp.sumStep2), bits(sp.maxRatio))
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
