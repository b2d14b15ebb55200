//go:build amd64 && !purego

#include "textflag.h"
#include "go_asm.h"

// The step loops of steps_vector.go: four elements an iteration, p in Y10,
// e in Y11, the step in Y12, as float64. Registers: Y0 Σp², Y1 Σs²,
// Y2 elements outside, Y3 finite pairs, Y4 the largest ratio by lane,
// Y5 1+StepMargin, Y6 maxSkip, Y7 0.5, Y8 the abs mask, Y15 zero.

// STEP measures the four elements in Y10, Y11, Y12.
#define STEP \
	VMULPD Y12, Y12, Y13 \
	VADDPD Y13, Y1, Y1 \
	VSUBPD Y10, Y10, Y13 \
	VCMPPD $0x0, Y15, Y13, Y13 \
	VSUBPD Y11, Y11, Y14 \
	VCMPPD $0x0, Y15, Y14, Y14 \
	VANDPD Y14, Y13, Y13 \
	VPSUBQ Y13, Y3, Y3 \
	VMULPD Y10, Y10, Y14 \
	VANDPD Y13, Y14, Y14 \
	VADDPD Y14, Y0, Y0 \
	VSUBPD Y10, Y11, Y14 \
	VANDPD Y8, Y14, Y14 \
	VMULPD Y7, Y12, Y12 \
	VMULPD Y5, Y12, Y9 \
	VCMPPD $0x1e, Y9, Y14, Y9 \
	VANDPD Y13, Y9, Y9 \
	VPSUBQ Y9, Y2, Y2 \
	VMULPD Y4, Y12, Y9 \
	VMULPD Y6, Y9, Y9 \
	VCMPPD $0x1e, Y9, Y14, Y9 \
	VANDPD Y13, Y9, Y9 \
	VMOVMSKPD Y9, AX

// RATIO folds the ratios of the four elements into Y4: dlt/half, 0 where
// dlt is 0 or the pair is not finite. A NaN (of a NaN step) is no ratio:
// VMAXPD gives its second operand when either is a NaN.
#define RATIO \
	VDIVPD Y12, Y14, Y9 \
	VCMPPD $0x0, Y15, Y14, Y10 \
	VANDNPD Y9, Y10, Y9 \
	VANDPD Y13, Y9, Y9 \
	VMAXPD Y4, Y9, Y4

// LEAN is STEP without Σp² and the finite count (the comparison's kernel
// has Σp², the same sum): a pair is finite when d − d is 0, d = e − p.
#define LEAN \
	VMULPD Y12, Y12, Y13 \
	VADDPD Y13, Y1, Y1 \
	VSUBPD Y10, Y11, Y14 \
	VSUBPD Y14, Y14, Y13 \
	VCMPPD $0x0, Y15, Y13, Y13 \
	VANDPD Y8, Y14, Y14 \
	VMULPD Y7, Y12, Y12 \
	VMULPD Y5, Y12, Y9 \
	VCMPPD $0x1e, Y9, Y14, Y9 \
	VANDPD Y13, Y9, Y9 \
	VPSUBQ Y9, Y2, Y2 \
	VMULPD Y4, Y12, Y9 \
	VMULPD Y6, Y9, Y9 \
	VCMPPD $0x1e, Y9, Y14, Y9 \
	VANDPD Y13, Y9, Y9 \
	VMOVMSKPD Y9, AX

// func stepsBF16F32LeanAVX2(p, e, s *byte, n int, st *stepLanes)
TEXT ·stepsBF16F32LeanAVX2(SB), NOSPLIT, $0-40
	MOVQ p+0(FP), SI
	MOVQ e+8(FP), DI
	MOVQ s+16(FP), R8
	MOVQ n+24(FP), CX
	MOVQ st+32(FP), DX
	SHRQ $2, CX
	JZ done
	VMOVUPD stepLanes_s2(DX), Y1
	VMOVDQU stepLanes_out(DX), Y2
	VMOVUPD stepLanes_rmax(DX), Y4
	VMOVUPD stepLanes_k(DX), Y5
	VMOVUPD stepLanes_skip(DX), Y6
	VMOVUPD stepLanes_half(DX), Y7
	VPCMPEQQ Y8, Y8, Y8
	VPSRLQ $1, Y8, Y8
	VXORPD Y15, Y15, Y15
loop:
	VPMOVZXWD 0(SI), X10
	VPSLLD $16, X10, X10
	VCVTPS2PD X10, Y10
	VCVTPS2PD 0(DI), Y11
	VCVTPS2PD 0(R8), Y12
	LEAN
	TESTL AX, AX
	JZ next
	RATIO
next:
	ADDQ $8, SI
	ADDQ $16, DI
	ADDQ $16, R8
	DECQ CX
	JNZ loop
	VMOVUPD Y1, stepLanes_s2(DX)
	VMOVDQU Y2, stepLanes_out(DX)
	VMOVUPD Y4, stepLanes_rmax(DX)
	VZEROUPPER
done:
	RET

// func stepsF32F32AVX2(p, e, s *byte, n int, st *stepLanes)
TEXT ·stepsF32F32AVX2(SB), NOSPLIT, $0-40
	MOVQ p+0(FP), SI
	MOVQ e+8(FP), DI
	MOVQ s+16(FP), R8
	MOVQ n+24(FP), CX
	MOVQ st+32(FP), DX
	SHRQ $2, CX
	JZ done
	VMOVUPD stepLanes_p2(DX), Y0
	VMOVUPD stepLanes_s2(DX), Y1
	VMOVDQU stepLanes_out(DX), Y2
	VMOVDQU stepLanes_fin(DX), Y3
	VMOVUPD stepLanes_rmax(DX), Y4
	VMOVUPD stepLanes_k(DX), Y5
	VMOVUPD stepLanes_skip(DX), Y6
	VMOVUPD stepLanes_half(DX), Y7
	VPCMPEQQ Y8, Y8, Y8
	VPSRLQ $1, Y8, Y8
	VXORPD Y15, Y15, Y15
loop:
	VCVTPS2PD 0(SI), Y10
	VCVTPS2PD 0(DI), Y11
	VCVTPS2PD 0(R8), Y12
	STEP
	TESTL AX, AX
	JZ next
	RATIO
next:
	ADDQ $16, SI
	ADDQ $16, DI
	ADDQ $16, R8
	DECQ CX
	JNZ loop
	VMOVUPD Y0, stepLanes_p2(DX)
	VMOVUPD Y1, stepLanes_s2(DX)
	VMOVDQU Y2, stepLanes_out(DX)
	VMOVDQU Y3, stepLanes_fin(DX)
	VMOVUPD Y4, stepLanes_rmax(DX)
	VZEROUPPER
done:
	RET

// func stepsBF16F32AVX2(p, e, s *byte, n int, st *stepLanes)
TEXT ·stepsBF16F32AVX2(SB), NOSPLIT, $0-40
	MOVQ p+0(FP), SI
	MOVQ e+8(FP), DI
	MOVQ s+16(FP), R8
	MOVQ n+24(FP), CX
	MOVQ st+32(FP), DX
	SHRQ $2, CX
	JZ done
	VMOVUPD stepLanes_p2(DX), Y0
	VMOVUPD stepLanes_s2(DX), Y1
	VMOVDQU stepLanes_out(DX), Y2
	VMOVDQU stepLanes_fin(DX), Y3
	VMOVUPD stepLanes_rmax(DX), Y4
	VMOVUPD stepLanes_k(DX), Y5
	VMOVUPD stepLanes_skip(DX), Y6
	VMOVUPD stepLanes_half(DX), Y7
	VPCMPEQQ Y8, Y8, Y8
	VPSRLQ $1, Y8, Y8
	VXORPD Y15, Y15, Y15
loop:
	VPMOVZXWD 0(SI), X10
	VPSLLD $16, X10, X10
	VCVTPS2PD X10, Y10
	VCVTPS2PD 0(DI), Y11
	VCVTPS2PD 0(R8), Y12
	STEP
	TESTL AX, AX
	JZ next
	RATIO
next:
	ADDQ $8, SI
	ADDQ $16, DI
	ADDQ $16, R8
	DECQ CX
	JNZ loop
	VMOVUPD Y0, stepLanes_p2(DX)
	VMOVUPD Y1, stepLanes_s2(DX)
	VMOVDQU Y2, stepLanes_out(DX)
	VMOVDQU Y3, stepLanes_fin(DX)
	VMOVUPD Y4, stepLanes_rmax(DX)
	VZEROUPPER
done:
	RET

// func stepsF32BF16AVX2(p, e, s *byte, n int, st *stepLanes)
TEXT ·stepsF32BF16AVX2(SB), NOSPLIT, $0-40
	MOVQ p+0(FP), SI
	MOVQ e+8(FP), DI
	MOVQ s+16(FP), R8
	MOVQ n+24(FP), CX
	MOVQ st+32(FP), DX
	SHRQ $2, CX
	JZ done
	VMOVUPD stepLanes_p2(DX), Y0
	VMOVUPD stepLanes_s2(DX), Y1
	VMOVDQU stepLanes_out(DX), Y2
	VMOVDQU stepLanes_fin(DX), Y3
	VMOVUPD stepLanes_rmax(DX), Y4
	VMOVUPD stepLanes_k(DX), Y5
	VMOVUPD stepLanes_skip(DX), Y6
	VMOVUPD stepLanes_half(DX), Y7
	VPCMPEQQ Y8, Y8, Y8
	VPSRLQ $1, Y8, Y8
	VXORPD Y15, Y15, Y15
loop:
	VCVTPS2PD 0(SI), Y10
	VPMOVZXWD 0(DI), X11
	VPSLLD $16, X11, X11
	VCVTPS2PD X11, Y11
	VCVTPS2PD 0(R8), Y12
	STEP
	TESTL AX, AX
	JZ next
	RATIO
next:
	ADDQ $16, SI
	ADDQ $8, DI
	ADDQ $16, R8
	DECQ CX
	JNZ loop
	VMOVUPD Y0, stepLanes_p2(DX)
	VMOVUPD Y1, stepLanes_s2(DX)
	VMOVDQU Y2, stepLanes_out(DX)
	VMOVDQU Y3, stepLanes_fin(DX)
	VMOVUPD Y4, stepLanes_rmax(DX)
	VZEROUPPER
done:
	RET
