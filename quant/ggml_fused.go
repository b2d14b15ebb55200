package quant

import "github.com/ckptcheck/ckptcheck/tensorfile"

// The Go loops that write a GGML block's values and, unless st is nil, its
// steps in one pass, over fixed-size arrays: what DecodeRange runs (Q8_0
// and Q4_K have theirs beside their decoders). The values are the
// decoders' (the same expressions, in the same order), the steps those of
// ggml_steps.go's functions, bit for bit: where a step is computed once a
// block and looked up, its products are exact (a half times a small
// integer, a power of two), so neither the grouping nor a fused
// multiply-add changes a bit.

// A ggmlFusedBlock decodes the whole blocks of src into y and, unless st
// is nil, their steps into st (each long enough).
type ggmlFusedBlock func(src []byte, y, st []float32)

// ggmlFused are the encodings with such a loop.
var ggmlFused = map[tensorfile.Encoding]ggmlFusedBlock{
	tensorfile.Q4_0:  fusedQ4_0,
	tensorfile.Q4_1:  fusedQ4_1,
	tensorfile.Q5_K:  fusedQ5K,
	tensorfile.Q6_K:  fusedQ6K,
	tensorfile.MXFP4: fusedMXFP4,
}

// blockAt is block i's bytes (of bn) in src, and its values' (of en) in
// ys and sts (nil when sts is).
func blockAt(src []byte, ys, sts []float32, i, bn, en int) (b []byte, y, st []float32) {
	if sts != nil {
		st = sts[en*i : en*(i+1)]
	}
	return src[bn*i : bn*(i+1)], ys[en*i : en*(i+1)], st
}

// nibbleLookup writes t[q] of the 32 codes q of qs, the low nibbles
// first, into out.
func nibbleLookup(qs *[16]byte, out []float32, t *[16]float32) {
	o := (*[32]float32)(out)
	for j := 0; j < 16; j += 4 {
		o[j], o[j+1], o[j+2], o[j+3] = t[qs[j]&0xF], t[qs[j+1]&0xF], t[qs[j+2]&0xF], t[qs[j+3]&0xF]
		o[j+16], o[j+17], o[j+18], o[j+19] = t[qs[j]>>4], t[qs[j+1]>>4], t[qs[j+2]>>4], t[qs[j+3]>>4]
	}
}

// nibbleMul writes t[q]·s of the 32 codes q of qs, the low nibbles first,
// into out: a block whose table would cost as much to fill as to use.
func nibbleMul(qs *[16]byte, out []float32, t *[16]float32, s float32) {
	o := (*[32]float32)(out)
	for j := 0; j < 16; j += 4 {
		o[j], o[j+1], o[j+2], o[j+3] = t[qs[j]&0xF]*s, t[qs[j+1]&0xF]*s, t[qs[j+2]&0xF]*s, t[qs[j+3]&0xF]*s
		o[j+16], o[j+17], o[j+18], o[j+19] = t[qs[j]>>4]*s, t[qs[j+1]>>4]*s, t[qs[j+2]>>4]*s, t[qs[j+3]>>4]*s
	}
}

// nibbleFloat is each 4-bit code as a float32.
var nibbleFloat = [16]float32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}

// halfSteps are ad and ad·2⁻¹¹ of a block's half d: step(d, q) is
// ad + 2|q|·(ad·2⁻¹¹), both products exact.
func halfSteps(d float32) (ad, adh float32) {
	ad = abs32(d)
	return ad, ad * halfULP
}

// fill32 and fill16 set every one of y to v.
func fill32(y *[32]float32, v float32) {
	for i := 0; i < 32; i += 4 {
		y[i], y[i+1], y[i+2], y[i+3] = v, v, v, v
	}
}

func fill16(y *[16]float32, v float32) {
	for i := 0; i < 16; i += 4 {
		y[i], y[i+1], y[i+2], y[i+3] = v, v, v, v
	}
}
