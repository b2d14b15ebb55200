//go:build amd64 && !purego

#include "textflag.h"

// func dot2AVX2(a, x, h, ax *float64, n int, out *[2]float64)
// Two accumulators a sum, eight elements an iteration; FMA-free (AVX2
// only) so that every CPU with AVX2 runs it.
TEXT ·dot2AVX2(SB), NOSPLIT, $0-48
	MOVQ a+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ h+16(FP), R8
	MOVQ ax+24(FP), R9
	MOVQ n+32(FP), CX
	MOVQ out+40(FP), DX
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	XORQ AX, AX
loop:
	VMOVUPD 0(SI)(AX*8), Y4
	VMULPD 0(DI)(AX*8), Y4, Y4
	VADDPD Y4, Y0, Y0
	VMOVUPD 32(SI)(AX*8), Y5
	VMULPD 32(DI)(AX*8), Y5, Y5
	VADDPD Y5, Y1, Y1
	VMOVUPD 0(R8)(AX*8), Y6
	VMULPD 0(R9)(AX*8), Y6, Y6
	VADDPD Y6, Y2, Y2
	VMOVUPD 32(R8)(AX*8), Y7
	VMULPD 32(R9)(AX*8), Y7, Y7
	VADDPD Y7, Y3, Y3
	ADDQ $8, AX
	CMPQ AX, CX
	JLT loop
	VADDPD Y1, Y0, Y0
	VADDPD Y3, Y2, Y2
	VEXTRACTF128 $1, Y0, X1
	VADDPD X1, X0, X0
	VHADDPD X0, X0, X0
	VEXTRACTF128 $1, Y2, X3
	VADDPD X3, X2, X2
	VHADDPD X2, X2, X2
	MOVSD X0, 0(DX)
	MOVSD X2, 8(DX)
	VZEROUPPER
	RET

// func deltaAVX2(merged, base, half *float64, n int, minField, precision uint64, counts *[8]uint64)
// deltaRow's loop, four elements an iteration: base becomes merged − base
// (0 where merged is not finite), half ½ulp(merged) from its exponent
// field (+Inf where not finite); counts gets the per-lane counts of
// differing elements (0..3) and of non-finite merged ones (4..7).
TEXT ·deltaAVX2(SB), NOSPLIT, $0-56
	MOVQ merged+0(FP), SI
	MOVQ base+8(FP), DI
	MOVQ half+16(FP), R8
	MOVQ n+24(FP), CX
	MOVQ counts+48(FP), DX
	VPBROADCASTQ minField+32(FP), Y12
	VPBROADCASTQ precision+40(FP), Y13
	MOVQ $0x7ff0000000000000, AX
	MOVQ AX, X14
	VPBROADCASTQ X14, Y14
	MOVQ $0x7ff, AX
	MOVQ AX, X15
	VPBROADCASTQ X15, Y15
	VXORPD Y9, Y9, Y9
	VPXOR Y10, Y10, Y10
	VPXOR Y11, Y11, Y11
	XORQ AX, AX
dloop:
	VMOVUPD 0(SI)(AX*8), Y0
	VMOVUPD 0(DI)(AX*8), Y1
	VSUBPD Y1, Y0, Y2
	VCMPPD $4, Y9, Y2, Y3
	VCMPPD $3, Y0, Y0, Y4
	VCMPPD $3, Y1, Y1, Y5
	VANDPD Y5, Y4, Y4
	VANDNPD Y3, Y4, Y3
	VPSUBQ Y3, Y10, Y10
	VPSRLQ $52, Y0, Y6
	VPAND Y15, Y6, Y6
	VPCMPEQQ Y15, Y6, Y7
	VPSUBQ Y7, Y11, Y11
	VANDNPD Y2, Y7, Y2
	VMOVUPD Y2, 0(DI)(AX*8)
	VPMAXSD Y12, Y6, Y8
	VPSUBQ Y13, Y8, Y8
	VPSLLQ $52, Y8, Y8
	VBLENDVPD Y7, Y14, Y8, Y8
	VMOVUPD Y8, 0(R8)(AX*8)
	ADDQ $4, AX
	CMPQ AX, CX
	JLT dloop
	VMOVDQU Y10, 0(DX)
	VMOVDQU Y11, 32(DX)
	VZEROUPPER
	RET
