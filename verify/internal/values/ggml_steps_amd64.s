//go:build amd64 && !purego

#include "textflag.h"

// BF16 loads four BF16 values at reg into float64 lanes y (through x).
#define BF16(reg, x, y) \
	VPMOVZXWD (reg), x \
	VPSLLD $16, x, x \
	ADDQ $8, reg \
	VCVTPS2PD x, y

// F32 loads four F32 values at reg into float64 lanes y (through x).
#define F32(reg, x, y) \
	VMOVUPS (reg), x \
	ADDQ $16, reg \
	VCVTPS2PD x, y

// BODY measures four pairs, a in Y0, b in Y1, their steps at DX: Σ step²
// (Y8); finite where a−a = 0 and b−b = 0 (mask Y5), counted in Y11; Σ a²
// of the finite (Y9); half = step·0.5 (Y2); |b − a| (Y3); outside where
// |b − a| > (1+StepMargin)·half, counted in Y10; and in Y4 the finite
// lanes whose ratio |b − a|/half may pass the lane's maximum (Y7): above
// max·half·(1 − 2⁻⁴⁰), a product that cannot round past the quotient.
#define BODY \
	VMOVUPS (DX), X2 \
	ADDQ $16, DX \
	VCVTPS2PD X2, Y2 \
	VMULPD Y2, Y2, Y3 \
	VADDPD Y3, Y8, Y8 \
	VSUBPD Y0, Y0, Y3 \
	VCMPPD $0, Y6, Y3, Y3 \
	VSUBPD Y1, Y1, Y4 \
	VCMPPD $0, Y6, Y4, Y4 \
	VANDPD Y4, Y3, Y5 \
	VPSUBQ Y5, Y11, Y11 \
	VMULPD Y0, Y0, Y3 \
	VANDPD Y5, Y3, Y3 \
	VADDPD Y3, Y9, Y9 \
	VMULPD Y12, Y2, Y2 \
	VSUBPD Y0, Y1, Y3 \
	VANDPD Y14, Y3, Y3 \
	VMULPD Y13, Y2, Y4 \
	VCMPPD $0x1e, Y4, Y3, Y4 \
	VANDPD Y5, Y4, Y4 \
	VPSUBQ Y4, Y10, Y10 \
	VMULPD Y2, Y7, Y4 \
	VMULPD Y15, Y4, Y4 \
	VCMPPD $0x1e, Y4, Y3, Y4 \
	VANDPD Y5, Y4, Y4

// func stepSumsAVX2(a, b, st *byte, n int, abf, bbf bool, out *stepSums)
// n is a multiple of 4.
TEXT ·stepSumsAVX2(SB), NOSPLIT, $0-48
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ st+16(FP), DX
	MOVQ n+24(FP), CX
	MOVB abf+32(FP), R8
	MOVB bbf+33(FP), R9
	MOVQ out+40(FP), R10

	VXORPD Y6, Y6, Y6 // zero
	VBROADCASTSD 32(R10), Y7 // max ratio, from out.max
	VXORPD Y8, Y8, Y8 // Σ step²
	VXORPD Y9, Y9, Y9 // Σ p²
	VXORPD Y10, Y10, Y10 // outside
	VXORPD Y11, Y11, Y11 // finite
	MOVQ $0x3FE0000000000000, AX // 0.5
	MOVQ AX, X12
	VBROADCASTSD X12, Y12
	MOVQ $0x3FF1000000000000, AX // 1.0625 = 1 + StepMargin
	MOVQ AX, X13
	VBROADCASTSD X13, Y13
	MOVQ $0x7FFFFFFFFFFFFFFF, AX
	MOVQ AX, X14
	VBROADCASTSD X14, Y14
	MOVQ $0x3FEFFFFFFFFFF800, AX // 1 − 2⁻⁴⁰
	MOVQ AX, X15
	VBROADCASTSD X15, Y15

loop:
	CMPQ CX, $4
	JLT  done
	TESTB R8, R8
	JNZ   abf16
	F32(SI, X0, Y0)
	JMP  aok
abf16:
	BF16(SI, X0, Y0)
aok:
	TESTB R9, R9
	JNZ   bbf16
	F32(DI, X1, Y1)
	JMP  bok
bbf16:
	BF16(DI, X1, Y1)
bok:
	BODY
	VMOVMSKPD Y4, AX
	TESTL AX, AX
	JZ    next
	// A lane may pass its maximum: the exact quotients of those lanes.
	VDIVPD Y2, Y3, Y0
	VANDPD Y4, Y0, Y0
	VMAXPD Y0, Y7, Y7
next:
	SUBQ $4, CX
	JMP  loop

done:
	VEXTRACTF128 $1, Y8, X3
	VADDPD X3, X8, X8
	VUNPCKHPD X8, X8, X3
	VADDSD X3, X8, X8
	MOVSD X8, 0(R10)
	VEXTRACTF128 $1, Y9, X3
	VADDPD X3, X9, X9
	VUNPCKHPD X9, X9, X3
	VADDSD X3, X9, X9
	MOVSD X9, 8(R10)
	VEXTRACTI128 $1, Y10, X3
	VPADDQ X3, X10, X10
	VPUNPCKHQDQ X10, X10, X3
	VPADDQ X3, X10, X10
	MOVSD X10, 16(R10)
	VEXTRACTI128 $1, Y11, X3
	VPADDQ X3, X11, X11
	VPUNPCKHQDQ X11, X11, X3
	VPADDQ X3, X11, X11
	MOVSD X11, 24(R10)
	VEXTRACTF128 $1, Y7, X3
	VMAXPD X3, X7, X7
	VUNPCKHPD X7, X7, X3
	VMAXSD X3, X7, X7
	MOVSD X7, 32(R10)
	VZEROUPPER
	RET
