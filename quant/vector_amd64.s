//go:build amd64 && !purego

#include "textflag.h"
#include "vector_amd64.h"

// Widening to float64; the decoders are in
// vector_fp8_amd64.s, vector_ggml_amd64.s and vector_affine_amd64.s.

// func widenBF16AVX2(dst *float64, src *byte, n int)
// n (a multiple of 8) BF16 values to float64, eight an iteration: each
// half moved to a float32's high bits, then widened (VCVTPS2PD quiets a
// NaN as CVTSS2SD does).
TEXT ·widenBF16AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	JZ wbdone
wbloop:
	VPMOVZXWD (SI), Y0
	VPSLLD $16, Y0, Y0
	VCVTPS2PD X0, Y1
	VEXTRACTI128 $1, Y0, X2
	VCVTPS2PD X2, Y2
	VMOVUPD Y1, 0(DI)
	VMOVUPD Y2, 32(DI)
	ADDQ $16, SI
	ADDQ $64, DI
	DECQ CX
	JNZ wbloop
	VZEROUPPER
wbdone:
	RET

// func widenF32AVX2(dst *float64, src *byte, n int)
// n (a multiple of 8) float32 values to float64, eight an iteration.
TEXT ·widenF32AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	JZ wfdone
wfloop:
	VCVTPS2PD 0(SI), Y1
	VCVTPS2PD 16(SI), Y2
	VMOVUPD Y1, 0(DI)
	VMOVUPD Y2, 32(DI)
	ADDQ $32, SI
	ADDQ $64, DI
	DECQ CX
	JNZ wfloop
	VZEROUPPER
wfdone:
	RET
