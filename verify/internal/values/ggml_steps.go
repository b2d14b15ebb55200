package values

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/ckptcheck/ckptcheck/quant"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// The step pass of the common quantized pair, a plain float side against
// one codec side that says its steps (a safetensors BF16 weight against its
// GGUF Q8_0 conversion): one loop over float32 chunks instead of the
// generic pass's float64 buffers. The portable loop keeps the generic
// pass's sums in its order, so its StepStats are the generic pass's bit for
// bit; the AVX2 loop (BF16 and F32 sides) sums in four lanes, so its sums
// differ in their last bits, and its counts and maximum, at the same index,
// do not (TestMeasureOneSided).

// oneSided enables the one-sided pass (off: the generic pass measures
// every pair, as the equivalence test needs).
var oneSided = true

// stepChunk is how many values a chunk converts at a time, on the stack.
const stepChunk = 512

// measureOneSided is measure for a pair with exactly one Stepper side and
// plain float sides as the kernels see them; ok is false for any other
// pair, which the generic pass measures.
func (sb *stepBuffers) measureOneSided(j *job, dc *decoder, pb, eb []byte) (sp stepPartial, ok bool, err error) {
	p := j.pair
	side := 0
	switch {
	case !oneSided || p.stepper[0] != nil && p.stepper[1] != nil:
		return sp, false, nil
	case p.stepper[1] != nil:
		side = 1
	}
	pd, ed := p.Published.kernelDType(), p.Exported.kernelDType()
	if !chunkable(pd) || !chunkable(ed) {
		return sp, false, nil
	}
	n := int(j.n)
	if cap(sb.steps) < n {
		sb.steps = make([]float32, n)
	}
	steps := sb.steps[:n]
	o := [2]*Operand{&p.Published, &p.Exported}[side]
	d, _ := matrixDims(o.Shape)
	mat := d.Rows * d.Cols
	r0 := j.start % mat / d.Cols
	if err := p.stepper[side].Steps(d, r0, r0+j.n/d.Cols, dc.parts[side], steps); err != nil {
		return sp, true, fmt.Errorf("steps of rows [%d, %d) of matrix %d: %w", r0, r0+j.n/d.Cols, j.start/mat, err)
	}
	if vec := vectorStepSums(); vec != nil && littleEndian && pd != safetensors.F16 && ed != safetensors.F16 {
		sp.vector(vec, pd, ed, pb, eb, steps, j.start)
		return sp, true, nil
	}
	var pa, ea [stepChunk]float32
	for c := 0; c < n; c += stepChunk {
		m := min(stepChunk, n-c)
		toFloat32(pd, pb, c, pa[:m])
		toFloat32(ed, eb, c, ea[:m])
		sp.chunk(pa[:m], ea[:m], steps[c:c+m], j.start+uint64(c))
	}
	return sp, true, nil
}

// chunk measures values a (published) and b (exported) against steps st,
// the first at index base: measure's loop, in float64 as there.
func (sp *stepPartial) chunk(a32, b32, st []float32, base uint64) {
	b32, st = b32[:len(a32)], st[:len(a32)]
	for i, av := range a32 {
		s := st[i]
		sp.sumStep2 += float64(s) * float64(s)
		a, b := float64(av), float64(b32[i])
		if a-a != 0 || b-b != 0 { // NaN or ±Inf
			continue
		}
		sp.sumP2 += a * a
		half := float64(s) / 2
		dlt := math.Abs(b - a)
		if dlt > (1+StepMargin)*half {
			sp.outside++
		}
		// The division only where the ratio may be a new maximum: the
		// product is below the quotient's threshold by far more than its
		// rounding, except near underflow, where the division decides.
		if sp.hasMax {
			if t := sp.maxRatio * half; !(dlt > t*(1-1e-9) || t < 1e-280) {
				continue
			}
		}
		r := dlt / half
		if dlt == 0 {
			r = 0
		}
		if !sp.hasMax || r > sp.maxRatio {
			sp.maxRatio, sp.maxIdx, sp.hasMax = r, base+uint64(i), true
		}
	}
}

func chunkable(d safetensors.DType) bool {
	return d == safetensors.BF16 || d == safetensors.F16 || d == safetensors.F32
}

// toFloat32 decodes values [at, at+len(dst)) of src, little-endian BF16,
// F16 or F32 (chunkable), exactly.
func toFloat32(d safetensors.DType, src []byte, at int, dst []float32) {
	switch d {
	case safetensors.BF16:
		src = src[2*at : 2*(at+len(dst))]
		for i := range dst {
			dst[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(src[2*i:])) << 16)
		}
	case safetensors.F16:
		src = src[2*at : 2*(at+len(dst))]
		for i := range dst {
			dst[i] = quant.F16ToFloat32(binary.LittleEndian.Uint16(src[2*i:]))
		}
	default:
		src = src[4*at : 4*(at+len(dst))]
		for i := range dst {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
		}
	}
}

// stepSums are what the vector loop returns for a run of values: the
// sums, the counts and the largest ratio (max, which the loop starts
// from: its ratios below it are not computed).
type stepSums struct {
	sumStep2, sumP2 float64
	outside, finite uint64
	max             float64
}

// vector measures the block with the vector loop, a chunk at a time; where
// a chunk's largest ratio is a new maximum, the chunk is scanned again for
// the first value at it, as the generic pass would have recorded.
func (sp *stepPartial) vector(vec func(a, b, st *byte, n int, abf, bbf bool, out *stepSums),
	pd, ed safetensors.DType, pb, eb []byte, steps []float32, base uint64) {
	pw, ew := pd.Bits()/8, ed.Bits()/8
	stepBytes := f32Bytes(steps)
	var pa, ea [stepChunk]float32
	n := len(steps)
	for c := 0; c < n; c += stepChunk {
		m := min(stepChunk, n-c)
		m4 := m &^ 3
		if m4 > 0 {
			s := stepSums{max: sp.maxRatio}
			if !sp.hasMax {
				s.max = 0
			}
			vec(&pb[c*pw], &eb[c*ew], &stepBytes[4*c], m4, pd == safetensors.BF16, ed == safetensors.BF16, &s)
			sp.sumStep2 += s.sumStep2
			sp.sumP2 += s.sumP2
			sp.outside += s.outside
			if s.finite > 0 && (!sp.hasMax || s.max > sp.maxRatio) {
				toFloat32(pd, pb, c, pa[:m4])
				toFloat32(ed, eb, c, ea[:m4])
				at := firstAtRatio(pa[:m4], ea[:m4], steps[c:c+m4], s.max)
				sp.maxRatio, sp.maxIdx, sp.hasMax = s.max, base+uint64(c+at), true
			}
		}
		if t := c + m4; m > m4 {
			toFloat32(pd, pb, t, pa[:m-m4])
			toFloat32(ed, eb, t, ea[:m-m4])
			sp.chunk(pa[:m-m4], ea[:m-m4], steps[t:c+m], base+uint64(t))
		}
	}
}

// firstAtRatio is the index of the first finite pair whose ratio, as
// chunk computes it, is r (0 if none is: the vector loop found it).
func firstAtRatio(a32, b32, st []float32, r float64) int {
	for i, av := range a32 {
		a, b := float64(av), float64(b32[i])
		if a-a != 0 || b-b != 0 {
			continue
		}
		dlt := math.Abs(b - a)
		q := dlt / (float64(st[i]) / 2)
		if dlt == 0 {
			q = 0
		}
		if q == r {
			return i
		}
	}
	return 0
}
