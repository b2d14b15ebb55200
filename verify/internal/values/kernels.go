package values

import (
	"bytes"
	"encoding/binary"
	"math"
	"unsafe"

	"github.com/x448/float16"

	"github.com/ckptcheck/ckptcheck/quant"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// The comparison kernels: an exact check that needs no decoding, and the
// statistics (kernels_stats.go) for blocks that fail it. Each consumes one
// filled block and returns its partial statistics; blocks merge in order.

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
		t := f16Values()
		for i := 0; i+1 < len(p); i += 2 {
			h := binary.LittleEndian.Uint16(p[i:])
			v := t[h]
			if v != v { // a NaN keeps its own bits
				v32 := quant.F16ToFloat32(h)
				if math.Float32bits(v32) != binary.LittleEndian.Uint32(e[2*i:]) {
					return false
				}
				continue
			}
			if math.Float32bits(float32(v)) != binary.LittleEndian.Uint32(e[2*i:]) {
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
// every byte of a torchtitan-style F32 export, and stops soon after a
// difference.
func bf16UpcastEqual(p, e []byte) bool {
	words := len(p) / 8
	aligned := words > 0 && uintptr(unsafe.Pointer(&p[0]))%8 == 0 && uintptr(unsafe.Pointer(&e[0]))%8 == 0
	if littleEndian && aligned {
		pw := unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(p))), words)
		ew := unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(e))), 2*words)
		// A fine-tuned export differs at once: look every 256 words.
		for len(pw) > 0 {
			k := min(len(pw), 256)
			var diff uint64
			for j, w := range pw[:k] {
				lo := (w&0xFFFF)<<16 | (w&0xFFFF_0000)<<32
				hi := (w&0xFFFF_0000_0000)>>16 | w&0xFFFF_0000_0000_0000
				diff |= (lo ^ ew[2*j]) | (hi ^ ew[2*j+1])
			}
			if diff != 0 {
				return false
			}
			pw, ew = pw[k:], ew[2*k:]
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
	// first value of each side and whether any other element's bits differ.
	pFirst, eFirst   float64
	hasFirst         bool
	pVaries, eVaries bool
	bitDiff          bool
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
