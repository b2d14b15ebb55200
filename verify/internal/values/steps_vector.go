package values

import (
	"math"
	"unsafe"

	"github.com/ckptcheck/ckptcheck/safetensors"
)

// The step loop over the bytes the kernels see, four elements at a time:
// the AVX2 loops of steps_amd64.s where the CPU has them. A chunk's
// loop keeps each lane's largest ratio, from the largest so far; the chunk
// is scanned again, one element at a time, only when one beats it, to
// find where it is. Sums go to lane i mod 4 in element order, as
// measureOneSide's do, so both give the same numbers.

// stepChunk is how many elements one call of a vector loop measures.
const stepChunk = 1024

// stepLanes is a vector step loop's state, by lane; the assembly reads it
// by the offsets in go_asm.h.
type stepLanes struct {
	p2, s2        [lanes]float64 // Σp², Σstep²
	out, fin      [lanes]uint64  // elements outside; finite pairs
	rmax          [lanes]float64 // the chunk's largest ratio
	k, skip, half [lanes]float64 // 1+StepMargin, maxSkip, 0.5

	// For the codec loops (codec_fused_amd64.s): (1+StepMargin)/2, the
	// chunk's largest ratio times maxSkip/2, the least of the two, the abs
	// mask; the iterations they measured again.
	k2, trig, gate [lanes]float64
	abs            [lanes]uint64
	again          uint64
}

// A stepLoop measures n (a multiple of 4) elements of p and e (BF16 or
// F32 as its name says) against steps s.
type stepLoop func(p, e, s *byte, n int, st *stepLanes)

// measureVector is measureOneSide over the kernels' bytes (pd, ed BF16 or
// F32) through loop.
func measureVector(sp *stepPartial, loop stepLoop, pd safetensors.DType, p []byte, ed safetensors.DType, e []byte, steps []float32, start uint64) {
	var v vectorSteps
	v.begin(loop, pd, ed, false)
	v.add(p, e, steps)
	v.end(sp, start)
}

// vectorSteps is measureVector in pieces: begin, add the block's elements
// in order (a multiple of 4 at a time, but for the last), end. Each lane
// adds the same elements in the same order as one call would.
type vectorSteps struct {
	st     stepLanes
	loop   stepLoop
	pd, ed safetensors.DType
	best   float64 // the largest ratio so far (-1: no finite pair)
	bestAt int
	done   int  // elements added
	lean   bool // loop counts no finite pairs (see leanStepLoop)
}

func (v *vectorSteps) begin(loop stepLoop, pd, ed safetensors.DType, lean bool) {
	*v = vectorSteps{loop: loop, pd: pd, ed: ed, best: -1, lean: lean}
	for l := range lanes {
		v.st.k[l], v.st.skip[l], v.st.half[l] = 1+StepMargin, maxSkip, 0.5
		v.st.k2[l], v.st.abs[l] = (1+StepMargin)/2, math.MaxInt64
	}
}

// add measures the block's next len(steps) elements, whose bytes are p
// and e.
func (v *vectorSteps) add(p, e []byte, steps []float32) {
	n := len(steps)
	psz, esz := v.pd.Bits()/8, v.ed.Bits()/8
	p, e = p[:n*psz], e[:n*esz]
	for c0 := 0; c0 < n; c0 += stepChunk {
		c1 := min(c0+stepChunk, n)
		m := (c1 - c0) &^ 3
		v.startChunk()
		if m > 0 {
			v.loop(&p[c0*psz], &e[c0*esz], (*byte)(unsafe.Pointer(&steps[c0])), m, &v.st)
		}
		v.endChunk(p, e, steps, c0, c1, m)
	}
	v.done += n
}

// startChunk readies the lanes for a chunk: they start at the largest
// ratio so far, so that only an element that beats it divides.
func (v *vectorSteps) startChunk() {
	st := &v.st
	r0 := max(v.best, 0)
	st.rmax, st.fin = [lanes]float64{r0, r0, r0, r0}, [lanes]uint64{}
	t := r0 * maxSkip * 0.5
	g := min(t, (1+StepMargin)/2)
	st.trig, st.gate, st.again = [lanes]float64{t, t, t, t}, [lanes]float64{g, g, g, g}, 0
}

// endChunk finishes the chunk of elements [c0, c1) of the elements being
// added (bytes p and e, steps): a vector loop measured the first m, a
// multiple of 4; it measures the rest, and finds the chunk's largest ratio
// where it beats the largest so far.
func (v *vectorSteps) endChunk(p, e []byte, steps []float32, c0, c1, m int) {
	st := &v.st
	pt, _ := elemTable(v.pd)
	et, _ := elemTable(v.ed)
	// ratio is element i's |e − p| / half step, ok false when the pair is
	// not finite.
	ratio := func(i int) (r float64, ok bool) {
		a, b := elemValue(pt, p, uint64(i)), elemValue(et, e, uint64(i))
		if a-a != 0 || b-b != 0 {
			return 0, false
		}
		dlt := math.Abs(b - a)
		if dlt == 0 {
			return 0, true
		}
		return dlt / (float64(steps[i]) / 2), true
	}
	cmax := max(max(st.rmax[0], st.rmax[1]), max(st.rmax[2], st.rmax[3]))
	fin := st.fin[0] + st.fin[1] + st.fin[2] + st.fin[3]
	for i := c0 + m; i < c1; i++ { // the last elements, one at a time
		s := float64(steps[i])
		st.s2[i&3] += s * s
		a, b := elemValue(pt, p, uint64(i)), elemValue(et, e, uint64(i))
		if a-a != 0 || b-b != 0 {
			continue
		}
		fin++
		st.p2[i&3] += a * a
		if dlt := math.Abs(b - a); dlt > (1+StepMargin)*(s/2) {
			st.out[i&3]++
		}
		if r, _ := ratio(i); r > cmax { // a NaN (a NaN step) is no ratio
			cmax = r
		}
	}
	if (fin == 0 && !v.lean) || (v.best >= 0 && cmax <= v.best) {
		return
	}
	// The first element that has it: in a lane whose largest ratio it is
	// (no other lane holds one), else among the last elements.
	at := -1
	for l := range lanes {
		if st.rmax[l] != cmax {
			continue
		}
		for i := c0 + l; i < c0+m && (at < 0 || i < at); i += lanes {
			if r, ok := ratio(i); ok && r == cmax {
				at = i
				break
			}
		}
	}
	for i := c0 + m; at < 0 && i < c1; i++ {
		if r, ok := ratio(i); ok && r == cmax {
			at = i
		}
	}
	if at >= 0 {
		v.best, v.bestAt = cmax, v.done+at
	}
}

// end adds the block's measures, its first element start, to sp.
func (v *vectorSteps) end(sp *stepPartial, start uint64) {
	st := &v.st
	sp.outside += st.out[0] + st.out[1] + st.out[2] + st.out[3]
	sp.sumP2 += (st.p2[0] + st.p2[1]) + (st.p2[2] + st.p2[3])
	sp.sumStep2 += (st.s2[0] + st.s2[1]) + (st.s2[2] + st.s2[3])
	sp.maxRatio, sp.hasMax = max(v.best, 0), v.best >= 0
	if sp.hasMax {
		sp.maxIdx = start + uint64(v.bestAt)
	}
}
