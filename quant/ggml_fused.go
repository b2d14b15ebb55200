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

// nibbleBlock writes the 32 codes of qs, the low nibbles first, through
// the block's tables by code into y and, unless st is nil, st.
func nibbleBlock(qs *[16]byte, y, st []float32, lv, ls *[16]float32) {
	out := (*[32]float32)(y)
	for j := 0; j < 16; j += 4 {
		out[j], out[j+1], out[j+2], out[j+3] = lv[qs[j]&0xF], lv[qs[j+1]&0xF], lv[qs[j+2]&0xF], lv[qs[j+3]&0xF]
		out[j+16], out[j+17], out[j+18], out[j+19] = lv[qs[j]>>4], lv[qs[j+1]>>4], lv[qs[j+2]>>4], lv[qs[j+3]>>4]
	}
	if st == nil {
		return
	}
	so := (*[32]float32)(st)
	for j := 0; j < 16; j += 4 {
		so[j], so[j+1], so[j+2], so[j+3] = ls[qs[j]&0xF], ls[qs[j+1]&0xF], ls[qs[j+2]&0xF], ls[qs[j+3]&0xF]
		so[j+16], so[j+17], so[j+18], so[j+19] = ls[qs[j]>>4], ls[qs[j+1]>>4], ls[qs[j+2]>>4], ls[qs[j+3]>>4]
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
