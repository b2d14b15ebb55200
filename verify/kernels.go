package verify

import (
	"bytes"
	"encoding/binary"
	"math"
	"unsafe"

	"github.com/x448/float16"

	"github.com/ckptcheck/ckptcheck/safetensors"
)

// The comparison kernels: an exact check that needs no decoding, and the
// decode with statistics for blocks that fail it. Each consumes one filled
// block and returns its partial statistics; blocks merge in order.

// decodeElems is how many elements are decoded to float64 at a time, so the
// decoded values stay in cache.
const decodeElems = 4096

// fastExact reports whether a block can be checked exactly without
// decoding: same dtype (bytes), or BF16/F16 published against F32.
func fastExact(p, e safetensors.DType) bool {
	return p == e || (e == safetensors.F32 && (p == safetensors.BF16 || p == safetensors.F16))
}

// exactBlock is true when every element is bit-identical, or is the exact
// F32 upcast of the published BF16/F16 value.
func exactBlock(pd, ed safetensors.DType, p, e []byte) bool {
	switch {
	case pd == ed:
		return bytes.Equal(p, e)
	case pd == safetensors.BF16:
		return bf16UpcastEqual(p, e)
	case pd == safetensors.F16:
		for i := 0; i+1 < len(p); i += 2 {
			if math.Float32bits(safetensors.F16ToFloat32(binary.LittleEndian.Uint16(p[i:]))) != binary.LittleEndian.Uint32(e[2*i:]) {
				return false
			}
		}
		return true
	}
	return false
}

// bf16UpcastEqual reports whether e (F32) is exactly p (BF16) widened: the
// F32 bits of BF16 bits b are b<<16. It reads both as words (a word of four
// BF16 values spreads into two of F32) and folds differences into one
// accumulator, so the loop has no branch but its own; this check runs over
// every byte of a torchtitan-style F32 export.
func bf16UpcastEqual(p, e []byte) bool {
	words := len(p) / 8
	aligned := words > 0 && uintptr(unsafe.Pointer(&p[0]))%8 == 0 && uintptr(unsafe.Pointer(&e[0]))%8 == 0
	if littleEndian && aligned {
		pw := unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(p))), words)
		ew := unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(e))), 2*words)
		var diff uint64
		for j, w := range pw {
			lo := (w&0xFFFF)<<16 | (w&0xFFFF_0000)<<32
			hi := (w&0xFFFF_0000_0000)>>16 | w&0xFFFF_0000_0000_0000
			diff |= (lo ^ ew[2*j]) | (hi ^ ew[2*j+1])
		}
		if diff != 0 {
			return false
		}
		p, e = p[8*words:], e[16*words:]
	}
	for i := 0; i+1 < len(p); i += 2 {
		if uint32(binary.LittleEndian.Uint16(p[i:]))<<16 != binary.LittleEndian.Uint32(e[2*i:]) {
			return false
		}
	}
	return true
}

// coarser reports whether an export of dtype e holds values of dtype p
// widened (a BF16 or F16 model exported in F32): its differences may then
// be no more than p's rounding.
func coarser(p, e safetensors.DType) bool {
	return e == safetensors.F32 && (p == safetensors.BF16 || p == safetensors.F16)
}

// roundsTo reports whether every F32 value of e rounds (to nearest, ties to
// even) to the published BF16 or F16 value in p: the export differs from
// the published values by no more than their own rounding.
func roundsTo(pd safetensors.DType, p, e []byte) bool {
	for i := 0; i+1 < len(p) && 2*i+3 < len(e); i += 2 {
		want := binary.LittleEndian.Uint16(p[i:])
		f := binary.LittleEndian.Uint32(e[2*i:])
		var got uint16
		switch {
		case f&0x7FFF_FFFF > 0x7F80_0000: // NaN: any NaN rounds to a NaN
			if pd == safetensors.BF16 && want&0x7FFF > 0x7F80 || pd == safetensors.F16 && want&0x7FFF > 0x7C00 {
				continue
			}
			return false
		case pd == safetensors.BF16:
			got = uint16((f + 0x7FFF + (f>>16)&1) >> 16)
		default:
			got = float16.Fromfloat32(math.Float32frombits(f)).Bits()
		}
		if got != want {
			return false
		}
	}
	return true
}

// roundingTolerance is the tolerance that accepts any difference within a
// dtype's rounding: half a unit in the last place, relative (and absolute
// for F16's subnormals).
func roundingTolerance(d safetensors.DType) Tolerance {
	if d == safetensors.F16 {
		return Tolerance{Atol: math.Ldexp(1, -25), Rtol: math.Ldexp(1, -11)}
	}
	return Tolerance{Rtol: math.Ldexp(1, -8)}
}

// littleEndian is true on the hosts safetensors files are native to; only
// there may bytes be read as machine words.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// partial is one block's statistics. Sums are float64 over one block, and
// blocks merge in order, so results do not depend on scheduling.
type partial struct {
	n, mismatches, nonfinite uint64
	sumAbs, sumD2, sumP2     float64
	sumE2, sumPE             float64
	maxAbs, maxP, maxE       float64
	maxIdx                   uint64
	hasMax                   bool
	nanIdx                   uint64
	hasNaN                   bool
	// Constant tensors are no evidence of re-initialization: track the
	// first finite value of each side and whether any other differs.
	pFirst, eFirst   float64
	hasFirst         bool
	pVaries, eVaries bool
	bitDiff          bool
}

// kernel holds a worker's decode buffers, reused for every block.
type kernel struct {
	pf, ef [2 * decodeElems]float64
}

// compare computes the statistics of one block: elements [base, base+n)
// whose bytes are p and e.
func (k *kernel) compare(pd, ed safetensors.DType, p, e []byte, base, n uint64, tol Tolerance) partial {
	r := partial{n: n}
	if !pd.Decodable() { // sub-byte floats of one dtype: bit for bit
		for i := range p {
			if p[i] != e[i] {
				r.mismatches++
			}
		}
		r.bitDiff = r.mismatches > 0
		return r
	}
	ints := pd.IsInteger() && ed.IsInteger() && tol == (Tolerance{})
	lanes := uint64(pd.Lanes())
	psz, esz := uint64(pd.Bits()/8), uint64(ed.Bits()/8)
	for off := uint64(0); off < n; off += decodeElems {
		m := min(decodeElems, n-off)
		np := safetensors.DecodeFloat64(pd, p[off*psz:(off+m)*psz], k.pf[:])
		safetensors.DecodeFloat64(ed, e[off*esz:(off+m)*esz], k.ef[:])
		if ints {
			r.ints(pd, ed, p[off*psz:], e[off*esz:], k.pf[:np], k.ef[:np], base+off)
		} else {
			r.floats(k.pf[:np], k.ef[:np], base+off, lanes, tol)
		}
	}
	r.bitDiff = pd != ed || !bytes.Equal(p, e)
	return r
}

// floats is the hot loop of a value comparison: statistics over finite
// pairs, kept in locals, with non-finite values sent to a slower path.
func (r *partial) floats(pf, ef []float64, base, lanes uint64, tol Tolerance) {
	atol, rtol := tol.Atol, tol.Rtol
	sumAbs, sumD2, sumP2, sumE2, sumPE := r.sumAbs, r.sumD2, r.sumP2, r.sumE2, r.sumPE
	mismatches := r.mismatches
	maxAbs := r.maxAbs
	if !r.hasMax {
		maxAbs = -1 // the first finite pair sets it
	}
	if !r.hasFirst && len(pf) > 0 {
		r.pFirst, r.eFirst, r.hasFirst = pf[0], ef[0], true
	}
	// Whether a side varies: any bits differing from its first value, folded
	// without branches (a -0 among zeros counts; it changes no verdict).
	p0, e0 := math.Float64bits(r.pFirst), math.Float64bits(r.eFirst)
	var pDiff, eDiff uint64
	ef = ef[:len(pf)]
	for i, pv := range pf {
		ev := ef[i]
		d := ev - pv
		if d-d != 0 { // NaN or Inf on a side (Inf - Inf is NaN too)
			r.mismatches = mismatches
			r.nonFinitePair(pv, ev, base+uint64(i)/lanes)
			mismatches = r.mismatches
			continue
		}
		ad := math.Abs(d)
		sumAbs += ad
		sumD2 += d * d
		sumP2 += pv * pv
		sumE2 += ev * ev
		sumPE += pv * ev
		// Whether an element is outside the tolerance is as good as random
		// in a fine-tuned tensor: count it without a branch to mispredict.
		var outside uint64
		if ad > atol+rtol*math.Abs(pv) {
			outside = 1
		}
		mismatches += outside
		if ad > maxAbs {
			maxAbs = ad
			r.maxIdx, r.maxP, r.maxE, r.hasMax = base+uint64(i)/lanes, pv, ev, true
		}
		pDiff |= math.Float64bits(pv) ^ p0
		eDiff |= math.Float64bits(ev) ^ e0
	}
	r.sumAbs, r.sumD2, r.sumP2, r.sumE2, r.sumPE = sumAbs, sumD2, sumP2, sumE2, sumPE
	r.mismatches, r.maxAbs = mismatches, max(maxAbs, 0)
	r.pVaries = r.pVaries || pDiff != 0
	r.eVaries = r.eVaries || eDiff != 0
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

// ints compares integers exactly (I64 and U64 beyond 2^53 included); the
// statistics use their float64 values.
func (r *partial) ints(pd, ed safetensors.DType, p, e []byte, pf, ef []float64, base uint64) {
	psz, esz := pd.Bits()/8, ed.Bits()/8
	exact := uint64(0)
	for i := range pf {
		pn, pm := safetensors.DecodeInt(pd, p[i*psz:])
		en, em := safetensors.DecodeInt(ed, e[i*esz:])
		if pn != en || pm != em {
			exact++
		}
	}
	before := r.mismatches
	r.floats(pf, ef, base, 1, Tolerance{})
	r.mismatches = before + exact
}

// merge adds r, the statistics of the elements that follow t's.
func (t *partial) merge(r partial) {
	t.n += r.n
	t.mismatches += r.mismatches
	t.nonfinite += r.nonfinite
	t.sumAbs += r.sumAbs
	t.sumD2 += r.sumD2
	t.sumP2 += r.sumP2
	t.sumE2 += r.sumE2
	t.sumPE += r.sumPE
	if r.hasMax && (!t.hasMax || r.maxAbs > t.maxAbs) {
		t.maxAbs, t.maxIdx, t.maxP, t.maxE, t.hasMax = r.maxAbs, r.maxIdx, r.maxP, r.maxE, true
	}
	if r.hasNaN && !t.hasNaN {
		t.hasNaN, t.nanIdx = true, r.nanIdx
	}
	if r.hasFirst {
		if !t.hasFirst {
			t.pFirst, t.eFirst, t.hasFirst = r.pFirst, r.eFirst, true
		}
		t.pVaries = t.pVaries || r.pVaries || r.pFirst != t.pFirst
		t.eVaries = t.eVaries || r.eVaries || r.eFirst != t.eFirst
	}
	t.bitDiff = t.bitDiff || r.bitDiff
}
