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
