package values

import (
	"fmt"
	"math"

	"github.com/ckptcheck/ckptcheck/quant"
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
	vals  [2][]float64
	steps []float32
	half  []float64
}

// measureSteps measures a decoded block against its codec sides' steps:
// pb and eb are the block's bytes as the kernels see them (a codec side
// as F32), parts the codec sides' part bytes as decode split them.
func (sb *stepBuffers) measure(j *job, dc *decoder, pb, eb []byte) (stepPartial, error) {
	if sp, ok, err := sb.measureOneSided(j, dc, pb, eb); ok {
		return sp, err
	}
	p := j.pair
	n := int(j.n)
	var sp stepPartial
	if cap(sb.half) < n {
		sb.half, sb.steps = make([]float64, n), make([]float32, n)
		sb.vals = [2][]float64{make([]float64, n), make([]float64, n)}
	}
	half, steps := sb.half[:n], sb.steps[:n]
	clear(half)
	raw := [2][]byte{pb, eb}
	for side, o := range [2]*Operand{&p.Published, &p.Exported} {
		quant.DecodeFloat64(o.kernelDType(), raw[side], sb.vals[side][:n])
		st := p.stepper[side]
		if st == nil {
			continue
		}
		d, _ := matrixDims(o.Shape)
		mat := d.Rows * d.Cols
		r0 := j.start % mat / d.Cols
		if err := st.Steps(d, r0, r0+j.n/d.Cols, dc.parts[side], steps); err != nil {
			return sp, fmt.Errorf("steps of rows [%d, %d) of matrix %d: %w", r0, r0+j.n/d.Cols, j.start/mat, err)
		}
		for i, s := range steps {
			half[i] += float64(s) / 2
			sp.sumStep2 += float64(s) * float64(s)
		}
	}
	pv, ev := sb.vals[0][:n], sb.vals[1][:n]
	for i := range n {
		a, b := pv[i], ev[i]
		if math.IsNaN(a) || math.IsNaN(b) || math.IsInf(a, 0) || math.IsInf(b, 0) {
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
	return sp, nil
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
	if t.sumStep2 == 0 {
		s.NoiseRelL2 = 0
	}
	if t.hasMax {
		s.MaxAt = unravel(t.maxIdx, p.Published.Shape)
	}
	p.Stats.Steps = s
}
