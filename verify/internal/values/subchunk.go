package values

import (
	"fmt"

	"github.com/ckptcheck/ckptcheck/quant"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// The sub-chunked path of a codec pair: a block of a plain side against a
// codec side whose codec decodes ranges of its rows (a RangeDecoder) is
// decoded a piece of subChunkElems at a time into small buffers, and each
// piece goes through the statistics kernel and the step loop while it is
// in the cache, instead of each making its own pass over the whole block.
// The kernels take the pieces in order and keep their lanes across them,
// so the numbers are those of the whole-block path, bit for bit.

// A RangeDecoder decodes a piece of rows [r0, r1) of a weight of d: from
// the same part bytes Decode takes, values [lo, hi) counted from row r0's
// first, into dst[:hi-lo], and their steps (as its Steps says them) into
// steps[:hi-lo] unless steps is nil. lo and hi are multiples of the
// codec's Tile().Cols (hi may be the rows' end), which divides d.Cols.
type RangeDecoder interface {
	DecodeRange(d quant.Dims, r0, r1 uint64, parts [][]byte, lo, hi uint64, dst, steps []float32) error
}

// subChunkElems is how many elements a piece holds: both sides' values and
// the steps of a piece stay in the second-level cache. A multiple of
// chunkElems (and so of the step loops' 4), so that the kernels' chunks
// are those of the whole block.
const subChunkElems = 8 * chunkElems

// subChunking chooses the sub-chunked path where a pair allows it; tests
// compare it with the whole-block path. Set it only while no Run is under
// way.
var subChunking = true

// leanSteps chooses the lean step loop where it exists; tests compare it
// with the full one.
var leanSteps = true

// codecLoops chooses the codec loop (codec_fused.go) where it exists;
// benchmarks compare it with the two passes.
var codecLoops = true

// subChunkSide is the codec side of a pair whose blocks may take the
// sub-chunked path, or -1: one side plain BF16, F16 or F32, the other a
// RangeDecoder whose tile columns divide its rows and the pieces, with no
// steps but its own. Column (and row) sums asked are added a piece at a
// time too.
func (p *Pair) subChunkSide() int {
	if (p.Published.Codec == nil) == (p.Exported.Codec == nil) {
		return -1
	}
	side := 0
	if p.Published.Codec == nil {
		side = 1
	}
	o, plain := [2]*Operand{&p.Published, &p.Exported}[side], [2]*Operand{&p.Published, &p.Exported}[1-side]
	if _, ok := o.Codec.(RangeDecoder); !ok || o.Steps != nil {
		return -1
	}
	switch plain.DType {
	case safetensors.BF16, safetensors.F16, safetensors.F32:
	default:
		return -1
	}
	d, _ := matrixDims(o.Shape)
	tc := max(o.Codec.Tile().Cols, 1)
	if d.Cols%tc != 0 || subChunkElems%tc != 0 {
		return -1
	}
	return side
}

// subBuffers are a worker's buffers for the sub-chunked path.
type subBuffers struct {
	vals, steps, plain []float32
	vector             vectorSteps
	portable           oneSideSteps
	fused              fusedSteps
	cols               columnBuffers
}

// subResult is what the sub-chunked path found of a block.
type subResult struct {
	part     partial
	steps    stepPartial
	hasSteps bool
	exact    bool // every element exact (see exactBlock); part is then not needed
	rounds   bool // the published side is what the export rounds to (see roundsTo)
}

// run compares a block of a pair whose codec side is side, a piece at a
// time: pb and eb are the block's filled bytes. It records the block's
// column sums where the pair asks for them (not in the fix-up pass: full).
func (sb *subBuffers) run(j *job, side int, k *kernel, dc *decoder, pb, eb []byte, full bool) (subResult, error) {
	p := j.pair
	o := [2]*Operand{&p.Published, &p.Exported}[side]
	rd := o.Codec.(RangeDecoder)
	d, _ := matrixDims(o.Shape)
	mat := d.Rows * d.Cols
	r0 := j.start % mat / d.Cols
	r1 := r0 + j.n/d.Cols
	raw := [2][]byte{pb, eb}
	parts := dc.split(j, side, raw[side])
	pd, ed := p.Published.kernelDType(), p.Exported.kernelDType()
	plainDType := [2]safetensors.DType{pd, ed}[1-side]
	psz := uint64(plainDType.Bits() / 8)
	if sb.vals == nil {
		sb.vals, sb.steps, sb.plain = make([]float32, subChunkElems), make([]float32, subChunkElems), make([]float32, subChunkElems)
	}
	res := subResult{hasSteps: p.stepper[side] != nil, exact: !full && fastExact(pd, ed), rounds: p.rounding.Load()}
	// The lean loop leaves Σp² to the kernel: over the same finite pairs,
	// in the same lanes and order, it is the same sum.
	loop, lean := vectorStepLoop(pd, ed), leanStepLoop(pd, ed) != nil && leanSteps
	if lean {
		loop = leanStepLoop(pd, ed)
	}
	// The codec loops measure the steps in the statistics' pass, where they
	// exist (either side decoded: a codec published takes the mirrored
	// loops) and the kernels read the plain side in place (it is aligned,
	// and so is every piece); as the lean loop, they leave Σp² to the
	// kernel.
	var gated, busy codecLoop
	var mirror bool
	if res.hasSteps && codecLoops && leanSteps && aligned(raw[1-side], psz) {
		gated, busy, mirror = codecStepLoops(pd, ed, p.Tolerance)
	}
	if gated != nil {
		loop, lean = leanStepLoop(pd, ed), true
	}
	sb.fused = fusedSteps{v: &sb.vector, gated: gated, busy: busy, mirror: mirror}
	vector := loop != nil || gated != nil
	if res.hasSteps {
		if vector {
			sb.vector.begin(loop, pd, ed, lean)
		} else {
			sb.portable.begin()
		}
	}
	var cols *columnSums
	if p.Columns && !full {
		cols = p.blockColumns(j.start, j.n)
	}
	k.begin(pd, ed, j.start, j.n, p.Tolerance)
	for lo := uint64(0); lo < j.n; lo += subChunkElems {
		hi := min(lo+subChunkElems, j.n)
		vals := sb.vals[:hi-lo]
		var steps []float32
		if res.hasSteps {
			steps = sb.steps[:hi-lo]
		}
		if err := rd.DecodeRange(d, r0, r1, parts, lo, hi, vals, steps); err != nil {
			return res, fmt.Errorf("decoding rows [%d, %d) of matrix %d: %w", r0, r1, j.start/mat, err)
		}
		var piece [2][]byte
		piece[side], piece[1-side] = f32Bytes(vals), raw[1-side][lo*psz:hi*psz]
		withSteps := gated != nil
		switch {
		case !res.hasSteps:
		case withSteps:
			sb.fused.steps = steps
			k.steps = &sb.fused
		case loop != nil:
			sb.vector.add(piece[0], piece[1], steps)
		default:
			plain := sb.plain[:hi-lo]
			decodeFloat32(plainDType, piece[1-side], plain)
			pv, ev := plain, vals
			if side == 0 {
				pv, ev = vals, plain
			}
			sb.portable.add(pv, ev, steps)
		}
		if cols != nil {
			sb.cols.add(cols, p, j.start+lo, hi-lo, pd, ed, piece[0], piece[1])
		}
		res.exact = res.exact && exactBlock(pd, ed, piece[0], piece[1])
		res.rounds = res.rounds && roundsTo(pd, piece[0], piece[1])
		k.add(piece[0], piece[1])
		if withSteps {
			k.steps = nil
			sb.vector.done += len(steps)
		}
	}
	if cols != nil {
		p.recordColumns(j.block, cols)
	}
	res.part = k.end(true)
	if res.hasSteps {
		if vector {
			sb.vector.end(&res.steps, j.start)
			if lean {
				res.steps.sumP2 = res.part.sumP2
			}
		} else {
			sb.portable.end(&res.steps, j.start)
		}
	}
	return res, nil
}
