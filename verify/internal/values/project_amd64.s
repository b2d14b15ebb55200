//go:build amd64 && !purego

#include "textflag.h"

// func dot2AVX2(a, x, h, ax *float64, n int, out *[2]float64)
// Four accumulators a sum (the adds' latency, not their throughput, bounds
// two), sixteen elements an iteration; FMA-free (AVX2 only) so that every
// CPU with AVX2 runs it.
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
	VXORPD Y4, Y4, Y4
	VXORPD Y5, Y5, Y5
	VXORPD Y6, Y6, Y6
	VXORPD Y7, Y7, Y7
	XORQ AX, AX
loop:
	VMOVUPD 0(SI)(AX*8), Y8
	VMULPD 0(DI)(AX*8), Y8, Y8
	VADDPD Y8, Y0, Y0
	VMOVUPD 32(SI)(AX*8), Y9
	VMULPD 32(DI)(AX*8), Y9, Y9
	VADDPD Y9, Y1, Y1
	VMOVUPD 64(SI)(AX*8), Y10
	VMULPD 64(DI)(AX*8), Y10, Y10
	VADDPD Y10, Y2, Y2
	VMOVUPD 96(SI)(AX*8), Y11
	VMULPD 96(DI)(AX*8), Y11, Y11
	VADDPD Y11, Y3, Y3
	VMOVUPD 0(R8)(AX*8), Y12
	VMULPD 0(R9)(AX*8), Y12, Y12
	VADDPD Y12, Y4, Y4
	VMOVUPD 32(R8)(AX*8), Y13
	VMULPD 32(R9)(AX*8), Y13, Y13
	VADDPD Y13, Y5, Y5
	VMOVUPD 64(R8)(AX*8), Y14
	VMULPD 64(R9)(AX*8), Y14, Y14
	VADDPD Y14, Y6, Y6
	VMOVUPD 96(R8)(AX*8), Y15
	VMULPD 96(R9)(AX*8), Y15, Y15
	VADDPD Y15, Y7, Y7
	ADDQ $16, AX
	CMPQ AX, CX
	JLT loop
	VADDPD Y1, Y0, Y0
	VADDPD Y3, Y2, Y2
	VADDPD Y2, Y0, Y0
	VADDPD Y5, Y4, Y4
	VADDPD Y7, Y6, Y6
	VADDPD Y6, Y4, Y4
	VEXTRACTF128 $1, Y0, X1
	VADDPD X1, X0, X0
	VHADDPD X0, X0, X0
	VEXTRACTF128 $1, Y4, X5
	VADDPD X5, X4, X4
	VHADDPD X4, X4, X4
	MOVSD X0, 0(DX)
	MOVSD X4, 8(DX)
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

// func deltaBF16AVX2(merged, base *byte, delta, half *float64, n int, minField, precision uint64, counts *[8]uint64)
// deltaAVX2 reading BF16 merged and base bytes itself (a BF16 value is the
// high half of a float32), writing the delta to delta.
TEXT ·deltaBF16AVX2(SB), NOSPLIT, $0-64
	MOVQ merged+0(FP), SI
	MOVQ base+8(FP), DI
	MOVQ delta+16(FP), R9
	MOVQ half+24(FP), R8
	MOVQ n+32(FP), CX
	MOVQ counts+56(FP), DX
	VPBROADCASTQ minField+40(FP), Y12
	VPBROADCASTQ precision+48(FP), Y13
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
bloop:
	VPMOVZXWD 0(SI)(AX*2), X0
	VPSLLD $16, X0, X0
	VCVTPS2PD X0, Y0
	VPMOVZXWD 0(DI)(AX*2), X1
	VPSLLD $16, X1, X1
	VCVTPS2PD X1, Y1
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
	VMOVUPD Y2, 0(R9)(AX*8)
	VPMAXSD Y12, Y6, Y8
	VPSUBQ Y13, Y8, Y8
	VPSLLQ $52, Y8, Y8
	VBLENDVPD Y7, Y14, Y8, Y8
	VMOVUPD Y8, 0(R8)(AX*8)
	ADDQ $4, AX
	CMPQ AX, CX
	JLT bloop
	VMOVDQU Y10, 0(DX)
	VMOVDQU Y11, 32(DX)
	VZEROUPPER
	RET
