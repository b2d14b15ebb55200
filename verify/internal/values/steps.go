package values

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/ckptcheck/ckptcheck/quant"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// Steps: the encoding's own bound. A lossy encoding stores, for every
// value, the step of the grid it was rounded to (a block's scale times the
// element grid's spacing there); round to nearest leaves the source within
// half of it. A codec that can say its steps implements Stepper, and the
// run then measures, beside the usual statistics, how far each difference
// is from half the step of its element, and the noise the steps imply.

// A Stepper says the quantization step of each value a codec decodes: for
// rows [r0, r1) of a weight of d, from the same part bytes Decode takes
// (the spans the codec names, in order), it writes into dst one step per
// value, the distance between the two grid values nearest the decoded one
// (for a uniform grid, the scale of the value's group; for a float grid,
// the spacing of its binade times the block's scale). Steps are ≥ 0 and
// finite for every value Decode makes finite. It is safe for concurrent
// use and never allocates by d.
type Stepper interface {
	Steps(d quant.Dims, r0, r1 uint64, parts [][]byte, dst []float32) error
}

// StepMargin widens half a step, relatively, for the rounding of the
// arithmetic that quantized and dequantized the values (x / scale and
// q · scale in float32).
const StepMargin = 1.0 / 16

// StepStats are a pair's differences measured against the steps of its
// codec sides.
type StepStats struct {
	// Outside counts finite pairs whose |e − p| exceeds (1+StepMargin)
	// times the sum of both sides' half steps.
	Outside uint64
	// MaxRatio is the largest |e − p| / half step (+Inf where a step is
	// zero and the values differ), at MaxAt (nil when no pair is finite).
	MaxRatio float64
	MaxAt    []uint64
	// NoiseRelL2 is the relative L2 error uniform rounding to the steps
	// implies, √(Σ step² / 12) / ‖p‖ (summed over both sides' steps).
	NoiseRelL2 float64
}

// stepPartial is a block's share of StepStats.
type stepPartial struct {
	outside  uint64
	maxRatio float64
	maxIdx   uint64
	hasMax   bool
	sumStep2 float64
	sumP2    float64
}

func (s *stepPartial) merge(o stepPartial) {
	s.outside += o.outside
	if o.hasMax && (!s.hasMax || o.maxRatio > s.maxRatio) {
		s.maxRatio, s.maxIdx, s.hasMax = o.maxRatio, o.maxIdx, true
	}
	s.sumStep2 += o.sumStep2
	s.sumP2 += o.sumP2
}

// steppers are the pair's Stepper sides; ok is false when a codec side has
// none (the pair then has no StepStats).
func (p *Pair) steppers() (st [2]Stepper, ok bool) {
	for side, o := range [2]*Operand{&p.Published, &p.Exported} {
		if o.Codec == nil {
			continue
		}
		s := o.Steps
		if s == nil {
			s, _ = o.Codec.(Stepper)
		}
		if s == nil {
			return st, false
		}
		st[side], ok = s, true
	}
	return st, ok
}

// A stepBuffers is a worker's buffers for the step pass.
type stepBuffers struct {
	vals  [2][]float32
	steps [2][]float32
	wide  [2][]float64 // sides of other dtypes, decoded exactly
}

// measure measures a decoded block against its codec sides' steps: pb and
// eb are the block's bytes as the kernels see them (a codec side as F32),
// parts the codec sides' part bytes as decode split them. It reads each
// side as float32 where that is exact (BF16, F16, F32, a decoded codec
// side), and adds in float64, as measureWide does for any dtype.
func (sb *stepBuffers) measure(j *job, dc *decoder, pb, eb []byte) (stepPartial, error) {
	p := j.pair
	n := int(j.n)
	var sp stepPartial
	raw := [2][]byte{pb, eb}
	sides := [2]*Operand{&p.Published, &p.Exported}
	var vals, steps [2][]float32
	for side, o := range sides {
		if cap(sb.vals[side]) < n {
			sb.vals[side], sb.steps[side] = make([]float32, n), make([]float32, n)
		}
		st := p.stepper[side]
		switch {
		case st == nil:
		case dc.hasSteps[side]:
			steps[side] = dc.steps[side][:n]
		default:
			steps[side] = sb.steps[side][:n]
			d, _ := matrixDims(o.Shape)
			mat := d.Rows * d.Cols
			r0 := j.start % mat / d.Cols
			if err := st.Steps(d, r0, r0+j.n/d.Cols, dc.parts[side], steps[side]); err != nil {
				return sp, fmt.Errorf("steps of rows [%d, %d) of matrix %d: %w", r0, r0+j.n/d.Cols, j.start/mat, err)
			}
		}
	}
	pd, ed := p.Published.kernelDType(), p.Exported.kernelDType()
	if one := steps[0]; (one == nil) != (steps[1] == nil) {
		if one == nil {
			one = steps[1]
		}
		if loop := vectorStepLoop(pd, ed); loop != nil {
			measureVector(&sp, loop, pd, pb, ed, eb, one, j.start)
			return sp, nil
		}
	}
	for side, o := range sides {
		switch kd := o.kernelDType(); {
		case o.Codec != nil:
			vals[side] = dc.values[side][:n]
		case kd == safetensors.BF16 || kd == safetensors.F16 || kd == safetensors.F32:
			vals[side] = sb.vals[side][:n]
			decodeFloat32(kd, raw[side], vals[side])
		default:
			sp.sumStep2 = sumSquares(steps[0]) + sumSquares(steps[1])
			return sb.measureWide(j, raw, steps, sp), nil
		}
	}
	switch {
	case steps[0] == nil:
		measureOneSide(&sp, vals[0], vals[1], steps[1], j.start)
	case steps[1] == nil:
		measureOneSide(&sp, vals[0], vals[1], steps[0], j.start)
	default:
		sp.sumStep2 = sumSquares(steps[0]) + sumSquares(steps[1])
		measureBothSides(&sp, vals[0], vals[1], steps[0], steps[1], j.start)
	}
	return sp, nil
}

// sumSquares is Σ s², in float64, four sums in turn.
func sumSquares(s []float32) float64 {
	var a [4]float64
	i := 0
	for ; i+4 <= len(s); i += 4 {
		x := s[i : i+4 : i+4]
		a[0] += float64(x[0]) * float64(x[0])
		a[1] += float64(x[1]) * float64(x[1])
		a[2] += float64(x[2]) * float64(x[2])
		a[3] += float64(x[3]) * float64(x[3])
	}
	for ; i < len(s); i++ {
		a[0] += float64(s[i]) * float64(s[i])
	}
	return (a[0] + a[1]) + (a[2] + a[3])
}

// decodeFloat32 decodes BF16, F16 or F32 bytes into dst, exactly.
func decodeFloat32(d safetensors.DType, src []byte, dst []float32) {
	switch d {
	case safetensors.BF16:
		src = src[:2*len(dst)]
		for i := range dst {
			dst[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(src[2*i:])) << 16)
		}
	case safetensors.F16:
		t := f16Values()
		src = src[:2*len(dst)]
		for i := range dst {
			h := binary.LittleEndian.Uint16(src[2*i:])
			if v := t[h]; v == v {
				dst[i] = float32(v)
			} else {
				dst[i] = quant.F16ToFloat32(h)
			}
		}
	case safetensors.F32:
		src = src[:4*len(dst)]
		for i := range dst {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
		}
	}
}

// The step loops: for each pair of finite values, |e − p| against half the
// step (the sum of both sides' half steps). The largest ratio is found
// without a division an element: only a difference that may beat the
// largest so far (by more than the products' rounding) divides.

// maxSkip is below 1 by more than the rounding of maxRatio · half, so an
// element skipped has a ratio below the largest so far.
const maxSkip = 1 - 1.0/(1<<40)

func measureOneSide(sp *stepPartial, pv, ev, steps []float32, start uint64) {
	var o oneSideSteps
	o.begin()
	o.add(pv, ev, steps)
	o.end(sp, start)
}

// oneSideSteps is measureOneSide in pieces: begin, add the block's
// elements in order (a multiple of 4 at a time, but for the last), end.
type oneSideSteps struct {
	p2, s2  [lanes]float64 // by lane, as measureVector adds them
	best    float64        // -1: no finite pair yet
	bestAt  uint64
	outside uint64
	done    uint64 // elements added
}

func (o *oneSideSteps) begin() { *o = oneSideSteps{best: -1} }

// add measures the block's next len(pv) elements.
func (o *oneSideSteps) add(pv, ev, steps []float32) {
	ev, steps = ev[:len(pv)], steps[:len(pv)]
	best := o.best
	for i, a := range pv {
		b, s := ev[i], float64(steps[i])
		o.s2[i&3] += s * s
		if a-a != 0 || b-b != 0 { // NaN or ±Inf
			continue
		}
		fa := float64(a)
		o.p2[i&3] += fa * fa
		dlt := math.Abs(float64(b) - fa)
		half := s / 2
		if dlt > (1+StepMargin)*half {
			o.outside++
		}
		if best >= 0 && dlt < best*half*maxSkip {
			continue
		}
		r := dlt / half
		if dlt == 0 {
			r = 0
		}
		if r > best {
			best, o.bestAt = r, o.done+uint64(i)
		}
	}
	o.best = best
	o.done += uint64(len(pv))
}

// end adds the block's measures, its first element start, to sp.
func (o *oneSideSteps) end(sp *stepPartial, start uint64) {
	sp.outside += o.outside
	sp.sumP2 += (o.p2[0] + o.p2[1]) + (o.p2[2] + o.p2[3])
	sp.sumStep2 += (o.s2[0] + o.s2[1]) + (o.s2[2] + o.s2[3])
	sp.maxRatio, sp.hasMax = max(o.best, 0), o.best >= 0
	if sp.hasMax {
		sp.maxIdx = start + o.bestAt
	}
}

func measureBothSides(sp *stepPartial, pv, ev, ps, es []float32, start uint64) {
	ev, ps, es = ev[:len(pv)], ps[:len(pv)], es[:len(pv)]
	best := -1.0
	for i, a := range pv {
		b := ev[i]
		if a-a != 0 || b-b != 0 {
			continue
		}
		fa := float64(a)
		sp.sumP2 += fa * fa
		dlt := math.Abs(float64(b) - fa)
		half := float64(ps[i])/2 + float64(es[i])/2
		if dlt > (1+StepMargin)*half {
			sp.outside++
		}
		r := dlt / half
		if dlt == 0 {
			r = 0
		}
		if r > best {
			best, sp.maxIdx = r, start+uint64(i)
		}
	}
	sp.maxRatio, sp.hasMax = max(best, 0), best >= 0
}

// measureWide is measure for a plain side of a dtype float32 cannot hold
// (F64, integers): both sides decoded to float64.
func (sb *stepBuffers) measureWide(j *job, raw [2][]byte, steps [2][]float32, sp stepPartial) stepPartial {
	p := j.pair
	n := int(j.n)
	half := make([]float64, n)
	for side, o := range [2]*Operand{&p.Published, &p.Exported} {
		if cap(sb.wide[side]) < n {
			sb.wide[side] = make([]float64, n)
		}
		quant.DecodeFloat64(o.kernelDType(), raw[side], sb.wide[side][:n])
		for i, s := range steps[side] {
			half[i] += float64(s) / 2
		}
	}
	pv, ev := sb.wide[0][:n], sb.wide[1][:n]
	for i := range n {
		a, b := pv[i], ev[i]
		if a-a != 0 || b-b != 0 {
			continue
		}
		sp.sumP2 += a * a
		dlt := math.Abs(b - a)
		if dlt > (1+StepMargin)*half[i] {
			sp.outside++
		}
		r := dlt / half[i]
		if dlt == 0 {
			r = 0
		}
		if !sp.hasMax || r > sp.maxRatio {
			sp.maxRatio, sp.maxIdx, sp.hasMax = r, j.start+uint64(i), true
		}
	}
	return sp
}

// recordSteps stores a block's step measures.
func (p *Pair) recordSteps(block int, sp stepPartial) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stepParts == nil {
		p.stepParts = make([]stepPartial, p.blocks.blocks)
	}
	p.stepParts[block] = sp
}

// finishSteps merges the blocks' step measures, in order; called with
// p.mu held.
func (p *Pair) finishSteps() {
	if p.stepParts == nil {
		return
	}
	var t stepPartial
	for _, sp := range p.stepParts {
		t.merge(sp)
	}
	p.stepParts = nil
	s := &StepStats{Outside: t.outside, MaxRatio: t.maxRatio, NoiseRelL2: math.Sqrt(t.sumStep2/12) / math.Sqrt(t.sumP2)}
	switch {
	case t.sumStep2 == 0:
		s.NoiseRelL2 = 0
	case math.IsNaN(s.NoiseRelL2): // of a NaN step: its payload is the loop's
		s.NoiseRelL2 = math.NaN()
	}
	if t.hasMax {
		s.MaxAt = unravel(t.maxIdx, p.Published.Shape)
	}
	p.Stats.Steps = s
}
