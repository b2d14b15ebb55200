package values

import (
	"math"
	"unsafe"
)

// The sub-chunked codec path's one pass: where a codec loop exists
// (codec_fused_amd64.s), each chunk of a piece goes through one loop that
// reads the plain side, the decoded values and their steps once and adds
// both the statistics (as the kernels do) and the steps (as the lean step
// loop does), lane by lane in the same order, so the numbers are those of
// the two passes (but for a NaN noise's payload). Its fused multiply-adds
// add products of widened float32 values, which are exact in float64: the
// sums are unchanged. A block's step chunks take the gated loop or the
// busy one, as many elements are outside their half steps or few.

// A codecLoop measures n (a multiple of 4) elements of p and e (BF16, F16
// or F32 as its name says, and F32; a mirrored loop's p is the exported
// side, BF16 or F16, and e the published F32) against steps s: their
// statistics into st, their steps into sl,
// leaving Σp² and the finite count to st and the elements outside to be
// masked by the chunk's finiteness (see fusedSteps.redo); n < 2^33.
type codecLoop func(p, e, s *byte, n int, st *laneState, sl *stepLanes)

// fusedSteps measures the steps of a piece in kernel.add's pass.
type fusedSteps struct {
	v           *vectorSteps
	gated, busy codecLoop
	mirror      bool          // the loops take the exported side first
	steps       []float32     // the piece's steps
	saved       [lanes]uint64 // the lanes' elements outside before the chunk
	useBusy     bool          // the last step chunk chose the busy loop
}

// Where the gated loop measures again more than 1 in busyAgain of its
// iterations, the next step chunk takes the busy loop; where the busy loop
// finds fewer than 1 in gatedOutside of its elements outside (each makes
// the gated loop measure its iteration again), the next takes the gated.
const busyAgain, gatedOutside = 8, 256

// chunk runs the kernel chunk of elements [off, off+m) of b through the
// codec loop, a step chunk at a time.
func (f *fusedSteps) chunk(k *kernel, b *block, off, m uint64) {
	v, st := f.v, &f.v.st
	f.saved = st.out
	for c0 := off; c0 < off+m; c0 += stepChunk {
		c1 := min(c0+stepChunk, off+m)
		n4 := (c1 - c0) &^ 3
		v.startChunk()
		if n4 > 0 {
			loop, out0 := f.gated, st.out
			if f.useBusy {
				loop = f.busy
			}
			p, e := &b.p[c0*b.psz], &b.e[c0*b.esz]
			if f.mirror {
				p, e = e, p
			}
			loop(p, e, (*byte)(unsafe.Pointer(&f.steps[c0])), int(n4), &k.st, st)
			if f.useBusy {
				out := (st.out[0] - out0[0]) + (st.out[1] - out0[1]) + (st.out[2] - out0[2]) + (st.out[3] - out0[3])
				f.useBusy = out*gatedOutside >= n4
			} else {
				f.useBusy = st.again*busyAgain*16 > n4
			}
		}
		if t := c0 + n4; t < c1 { // the block's last elements
			b.portable(&b.p[t*b.psz], &b.e[t*b.esz], int(c1-t), &k.st)
		}
		v.endChunk(b.p, b.e, f.steps, int(c0), int(c1), int(n4))
	}
}

// redo counts again the elements outside of a chunk with a NaN or an
// infinity, which the codec loop counted without asking: finite pairs only.
func (f *fusedSteps) redo(b *block, off, m uint64) {
	v := f.v
	v.st.out = f.saved
	pt, _ := elemTable(v.pd)
	et, _ := elemTable(v.ed)
	for i := off; i < off+m; i++ {
		a, e := elemValue(pt, b.p, i), elemValue(et, b.e, i)
		if a-a != 0 || e-e != 0 {
			continue
		}
		if s := float64(f.steps[i]); math.Abs(e-a) > (1+StepMargin)*(s/2) {
			v.st.out[i&3]++
		}
	}
}
