package values

import (
	"bytes"
	"encoding/binary"
	"math"
	"sync"
	"unsafe"

	"github.com/ckptcheck/ckptcheck/quant"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

//go:generate go run ./internal/kernelgen

// The statistics of a block. Its elements are taken in chunks of
// chunkElems; each chunk goes through a fused loop for its pair of dtypes
// (kernels_gen.go, or the AVX2 loops of kernels_amd64.s) that decodes both
// sides and adds every statistic in one pass, with no branch but the
// loop's. Element i of a block adds to lane i mod lanes: each lane sums its
// elements in order, in float64, and the lanes are added in a fixed order
// when the block ends, so a block's statistics are one definite value,
// whichever loop computed them. The vector loops hold one lane per float64
// of a 256-bit register; the portable loops make one pass per lane.
//
// A chunk with a NaN or an infinity on either side shows as a lane sum of
// |d| that is not finite afterwards (|d| ≥ 0, so no two infinities cancel):
// its sums are restored and it is done again by slowChunk, which skips the
// non-finite pairs as the definitions say. The largest |d| is tracked by
// lane and chunk; where it is (the first element that has it) is found once
// a block, from the chunk and lane that hold it.

// lanes is how many partial sums a block keeps of each statistic.
const lanes = 4

// chunkElems is how many values a fused loop takes at a time: a chunk of
// either side fits in the first-level cache, and a chunk with a NaN is
// redone at small cost.
const chunkElems = 2048

// laneState is a block's running statistics, by lane, and the constants the
// loops need; the assembly reads it by the offsets in go_asm.h.
type laneState struct {
	sum  [5][lanes]float64 // Σ|d|, Σd², Σp², Σe², Σp·e
	out  [lanes]uint64     // elements outside the tolerance
	max  [lanes]float64    // this chunk's largest |d| (-1: no finite pair)
	atol [lanes]float64    // the tolerance, in every lane
	rtol [lanes]float64
}

// kernelMode chooses the loops; tests and benchmarks compare them.
type kernelMode int

const (
	kernelsAuto      kernelMode = iota // the vector loops where the CPU has them
	kernelsPortable                    // the Go loops only
	kernelsReference                   // every chunk through slowChunk: the definitions, slowly
)

// kernelChoice is the loops every comparison uses. Set it only while no
// comparison runs.
var kernelChoice = kernelsAuto

// kernel holds a worker's state, reused for every block.
type kernel struct {
	st     laneState
	pf, ef [chunkElems]float64 // a chunk's decoded values, where needed
	cmax   [][lanes]float64    // each chunk's largest |d|, by lane, of the last add

	// steps, while set, measures the steps of the elements being added in
	// the statistics' pass over them (codec_fused.go).
	steps *fusedSteps

	// The block under way (see begin).
	r          partial
	b          block
	mode       kernelMode
	base, done uint64 // the block's first element; its elements added so far
	p0, e0     uint64 // the first element's bytes, repeated
}

// A block is what compare works on: the bytes of both sides, and how to
// read them.
type block struct {
	pd, ed     safetensors.DType
	p, e       []byte
	psz, esz   uint64 // bytes an element
	vl         uint64 // values an element (2 for C64)
	fused      bool   // a fused loop reads the bytes; else decoded values
	portable   func(p, e *byte, n int, st *laneState)
	vector     func(p, e *byte, n int, st *laneState)
	vectorVals func(p, e *byte, n int, st *laneState)
}

// compare computes the statistics of one block: elements [base, base+n)
// whose bytes are p and e.
func (k *kernel) compare(pd, ed safetensors.DType, p, e []byte, base, n uint64, tol Tolerance) partial {
	if !pd.Decodable() { // sub-byte floats of one dtype: bit for bit
		r := partial{n: n}
		for i := range p {
			if p[i] != e[i] {
				r.mismatches++
			}
		}
		r.bitDiff = r.mismatches > 0
		return r
	}
	if n == 0 {
		return partial{n: n, bitDiff: pd != ed || !bytes.Equal(p, e)}
	}
	k.begin(pd, ed, base, n, tol)
	k.add(p, e)
	intExact := pd.IsInteger() && ed.IsInteger() && tol == (Tolerance{})
	r := k.end(!intExact)
	if intExact {
		r.mismatches += intMismatches(pd, ed, p, e, n)
	}
	return r
}

// begin starts the statistics of a block of n > 0 decodable elements from
// base; add then takes its elements in order, and end returns them. Taken
// in pieces or whole, each lane adds the same elements in the same order:
// the numbers are the same.
func (k *kernel) begin(pd, ed safetensors.DType, base, n uint64, tol Tolerance) {
	k.r = partial{n: n, bitDiff: pd != ed}
	k.b = block{pd: pd, ed: ed, psz: uint64(pd.Bits() / 8), esz: uint64(ed.Bits() / 8), vl: uint64(pd.Lanes())}
	k.base, k.done = base, 0
	k.mode = kernelChoice
	st := &k.st
	*st = laneState{}
	for l := range lanes {
		st.atol[l], st.rtol[l] = tol.Atol, tol.Rtol
	}
}

// add takes the block's next elements, whose bytes are p and e: a
// multiple of chunkElems values unless they are the block's last.
func (k *kernel) add(p, e []byte) {
	b, r := &k.b, &k.r
	n := uint64(len(p)) / b.psz
	if n == 0 {
		return
	}
	r.bitDiff = r.bitDiff || !bytes.Equal(p, e)
	b.p, b.e = p, e
	b.portable, b.vector, b.vectorVals = nil, nil, nil
	// The fused loops read elements as host words in place.
	if littleEndian && aligned(p, b.psz) && aligned(e, b.esz) {
		b.portable = portableKernel(b.pd, b.ed)
	}
	b.fused = b.portable != nil
	if k.mode == kernelsAuto {
		b.vector, b.vectorVals = vectorKernel(b.pd, b.ed), vectorValuesKernel()
	}
	if k.done == 0 {
		r.pFirst, r.eFirst, r.hasFirst = decodeAt(b.pd, p, 0), decodeAt(b.ed, e, 0), true
		k.p0, k.e0 = repeatBytes(p[:b.psz]), repeatBytes(e[:b.esz])
	}
	st := &k.st
	base := k.base + k.done
	k.cmax = k.cmax[:0]
	values := n * b.vl
	for off := uint64(0); off < values; off += chunkElems {
		m := min(chunkElems, values-off)
		// Whether a side varies: any element's bytes other than the
		// first's (a -0 among zeros counts; it changes no verdict).
		i, j := off/b.vl, (off+m)/b.vl
		r.pVaries = r.pVaries || differs(p[i*b.psz:j*b.psz], k.p0)
		r.eVaries = r.eVaries || differs(e[i*b.esz:j*b.esz], k.e0)
		saved := *st
		st.max = [lanes]float64{-1, -1, -1, -1}
		switch {
		case k.steps != nil:
			k.steps.chunk(k, b, off, m)
		case k.mode != kernelsReference:
			k.fast(b, off, m)
		}
		if k.mode == kernelsReference || !finiteLanes(&st.sum[0]) {
			*st = saved
			st.max = [lanes]float64{-1, -1, -1, -1}
			k.slowChunk(r, b, off, m, base)
			if k.steps != nil {
				k.steps.redo(b, off, m)
			}
		}
		k.cmax = append(k.cmax, st.max)
	}
	k.locateMax(r, b, base)
	k.done += n
}

// end returns the block's statistics; countOut adds the elements outside
// the tolerance to its mismatches.
func (k *kernel) end(countOut bool) partial {
	r, st := k.r, &k.st
	s := &st.sum
	r.sumAbs = (s[0][0] + s[0][1]) + (s[0][2] + s[0][3])
	r.sumD2 = (s[1][0] + s[1][1]) + (s[1][2] + s[1][3])
	r.sumP2 = (s[2][0] + s[2][1]) + (s[2][2] + s[2][3])
	r.sumE2 = (s[3][0] + s[3][1]) + (s[3][2] + s[3][3])
	r.sumPE = (s[4][0] + s[4][1]) + (s[4][2] + s[4][3])
	if countOut {
		r.mismatches += st.out[0] + st.out[1] + st.out[2] + st.out[3]
	}
	return r
}

// fast runs the fused loop over values [off, off+m) of a block.
func (k *kernel) fast(b *block, off, m uint64) {
	st := &k.st
	if !b.fused {
		k.decode(b, off, m)
		pf, ef := k.pf[:m], k.ef[:m]
		if v := m &^ (vectorStep - 1); v > 0 && b.vectorVals != nil {
			b.vectorVals((*byte)(unsafe.Pointer(&pf[0])), (*byte)(unsafe.Pointer(&ef[0])), int(v), st)
			pf, ef = pf[v:], ef[v:]
		}
		if len(pf) > 0 {
			fusedValues((*byte)(unsafe.Pointer(&pf[0])), (*byte)(unsafe.Pointer(&ef[0])), len(pf), st)
		}
		return
	}
	p, e := b.p[off*b.psz:(off+m)*b.psz], b.e[off*b.esz:(off+m)*b.esz]
	if v := m &^ (vectorStep - 1); v > 0 && b.vector != nil {
		b.vector(&p[0], &e[0], int(v), st)
		p, e = p[v*b.psz:], e[v*b.esz:]
	}
	if len(p) > 0 {
		b.portable(&p[0], &e[0], len(p)/int(b.psz), st)
	}
}

// decode decodes values [off, off+m) of both sides into k.pf and k.ef.
func (k *kernel) decode(b *block, off, m uint64) {
	i, j := off/b.vl, (off+m)/b.vl
	quant.DecodeFloat64(b.pd, b.p[i*b.psz:j*b.psz], k.pf[:m])
	quant.DecodeFloat64(b.ed, b.e[i*b.esz:j*b.esz], k.ef[:m])
}

// slowChunk does values [off, off+m) of a block one by one: finite pairs
// add to their lanes exactly as the fused loops add them, and a pair with
// a NaN or an infinity is judged by nonFinitePair.
func (k *kernel) slowChunk(r *partial, b *block, off, m, base uint64) {
	k.decode(b, off, m)
	st := &k.st
	atol, rtol := st.atol[0], st.rtol[0]
	for i, pv := range k.pf[:m] {
		ev := k.ef[i]
		l := i % lanes
		d := ev - pv
		if d-d != 0 { // NaN or Inf on a side (Inf - Inf is NaN too)
			r.nonFinitePair(pv, ev, base+(off+uint64(i))/b.vl)
			continue
		}
		ad := math.Abs(d)
		st.sum[0][l] += ad
		st.sum[1][l] += float64(d * d)
		st.sum[2][l] += float64(pv * pv)
		st.sum[3][l] += float64(ev * ev)
		st.sum[4][l] += float64(pv * ev)
		if ad > atol+float64(rtol*math.Abs(pv)) {
			st.out[l]++
		}
		st.max[l] = max(st.max[l], ad)
	}
}

// locateMax sets the block's largest |d| and the first element that has
// it, when the elements just added (b's, from base) hold a larger one than
// those before: the first chunk whose lanes reached it, and there the
// lowest index in the lanes that did.
func (k *kernel) locateMax(r *partial, b *block, base uint64) {
	best := -1.0
	for _, c := range k.cmax {
		best = max(best, c[0], c[1], c[2], c[3])
	}
	if best < 0 || (r.hasMax && best <= r.maxAbs) {
		return // no finite pair, or none beyond the largest before
	}
	for c, lm := range k.cmax {
		if max(lm[0], lm[1], lm[2], lm[3]) != best {
			continue
		}
		off := uint64(c) * chunkElems
		m := min(chunkElems, uint64(len(b.p))/b.psz*b.vl-off)
		if at, ok := firstAbs(b, off, m, lm, best); ok {
			pt, _ := elemTable(b.pd)
			et, _ := elemTable(b.ed)
			r.maxAbs, r.maxIdx, r.hasMax = best, base+off+at, true
			r.maxP, r.maxE = elemValue(pt, b.p, off+at), elemValue(et, b.e, off+at)
			return
		}
		k.decode(b, off, m)
		at := m
		for l := range uint64(lanes) {
			if lm[l] != best {
				continue
			}
			for i := l; i < at; i += lanes {
				if d := k.ef[i] - k.pf[i]; d-d == 0 && math.Abs(d) == best {
					at = i
					break
				}
			}
		}
		r.maxAbs, r.maxIdx, r.hasMax = best, base+(off+at)/b.vl, true
		r.maxP, r.maxE = k.pf[at], k.ef[at]
		return
	}
}

// firstAbs is where locateMax looks without decoding the chunk, for
// BF16, F16 and F32 sides: the first of elements [off, off+m) of b whose
// |d| is best, in the lanes whose largest it is (lm); ok false where it
// does not look.
func firstAbs(b *block, off, m uint64, lm [lanes]float64, best float64) (at uint64, ok bool) {
	pt, pok := elemTable(b.pd)
	et, eok := elemTable(b.ed)
	if b.vl != 1 || !pok || !eok {
		return 0, false
	}
	at = m
	for l := range uint64(lanes) {
		if lm[l] != best {
			continue
		}
		for i := l; i < at; i += lanes {
			if d := elemValue(et, b.e, off+i) - elemValue(pt, b.p, off+i); d-d == 0 && math.Abs(d) == best {
				at = i
				break
			}
		}
	}
	return at, at < m
}

// elemTable is the table elemValue reads a dtype's elements by (nil: F32),
// ok false for a dtype it does not read.
func elemTable(d safetensors.DType) (t *[1 << 16]float64, ok bool) {
	switch d {
	case safetensors.BF16:
		return bf16Values(), true
	case safetensors.F16:
		return f16Values(), true
	}
	return nil, d == safetensors.F32
}

// elemValue is element i of b as the kernels decode it: by its bits in t,
// or as F32 where t is nil.
func elemValue(t *[1 << 16]float64, b []byte, i uint64) float64 {
	if t != nil {
		return t[binary.LittleEndian.Uint16(b[2*i:])]
	}
	return float64(math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])))
}

// finiteLanes reports whether every lane sum is finite.
func finiteLanes(s *[lanes]float64) bool {
	return s[0]-s[0] == 0 && s[1]-s[1] == 0 && s[2]-s[2] == 0 && s[3]-s[3] == 0
}

// decodeAt decodes element i of b (its first value, for C64).
func decodeAt(d safetensors.DType, b []byte, i uint64) float64 {
	var v [2]float64
	size := uint64(d.Bits() / 8)
	quant.DecodeFloat64(d, b[i*size:(i+1)*size], v[:])
	return v[0]
}

// repeatBytes repeats an element's bytes (1, 2, 4 or 8) to fill a word.
func repeatBytes(elem []byte) uint64 {
	var w [8]byte
	for i := range w {
		w[i] = elem[i%len(elem)]
	}
	return binary.LittleEndian.Uint64(w[:])
}

// differs reports whether any element of b, which starts at an element,
// has other bytes than those repeated in rep.
func differs(b []byte, rep uint64) bool {
	var acc uint64
	for len(b) >= 8 {
		acc |= binary.LittleEndian.Uint64(b) ^ rep
		b = b[8:]
	}
	for i, c := range b {
		acc |= uint64(c ^ byte(rep>>(8*i)))
	}
	return acc != 0
}

// aligned reports whether b starts on a multiple of size.
func aligned(b []byte, size uint64) bool {
	return len(b) == 0 || uint64(uintptr(unsafe.Pointer(&b[0])))%size == 0
}

// intMismatches counts integer elements that differ, exactly (I64 and U64
// beyond 2^53 included).
func intMismatches(pd, ed safetensors.DType, p, e []byte, n uint64) uint64 {
	psz, esz := uint64(pd.Bits()/8), uint64(ed.Bits()/8)
	var out uint64
	for i := range n {
		pn, pm := quant.DecodeInt(pd, p[i*psz:])
		en, em := quant.DecodeInt(ed, e[i*esz:])
		if pn != en || pm != em {
			out++
		}
	}
	return out
}

// bf16Values and f16Values hold every BF16 and F16 value by its bits, for
// the portable loops: a lookup (the values a tensor uses cluster in a few
// kilobytes of the table) costs less than decoding the bits and widening
// them to float64. Made on first use, from safetensors' decoder, the source
// of truth.
var (
	bf16Values = sync.OnceValue(func() *[1 << 16]float64 { return valueTable(safetensors.BF16) })
	f16Values  = sync.OnceValue(func() *[1 << 16]float64 { return valueTable(safetensors.F16) })
)

func valueTable(d safetensors.DType) *[1 << 16]float64 {
	var all [2 << 16]byte
	for h := range 1 << 16 {
		binary.LittleEndian.PutUint16(all[2*h:], uint16(h))
	}
	t := new([1 << 16]float64)
	quant.DecodeFloat64(d, all[:], t[:])
	return t
}

// nonFinitePair handles a pair where a side is NaN or infinite: equal when
// both are NaN or both the same infinity, else a mismatch.
func (r *partial) nonFinitePair(pv, ev float64, idx uint64) {
	pFinite := pv-pv == 0
	eFinite := ev-ev == 0
	if pFinite && !eFinite {
		r.nonfinite++
	}
	if ev == pv || (math.IsNaN(pv) && math.IsNaN(ev)) {
		return
	}
	r.mismatches++
	if !r.hasNaN {
		r.hasNaN, r.nanIdx = true, idx
	}
}
