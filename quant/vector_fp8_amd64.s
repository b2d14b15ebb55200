//go:build amd64 && !purego

#include "textflag.h"
#include "vector_amd64.h"

// The FP8 decoders: E4M3 scaled per tensor or channel, and block FP8.

// func e4m3ScaledAVX2(dst, steps *float32, codes *byte, n int, s float32, nan uint32)
// Eight codes an iteration: the value's bits are built from the code
// (sign, exponent and mantissa moved to float32's places, a subnormal
// landing on float32's subnormals) and multiplied by 2^120, exactly t[b];
// the NaN code takes the table's NaN; then × s. The step is
// 2^(max(e, 1) − 10), built as bits, × |s|.
TEXT ·e4m3ScaledAVX2(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ steps+8(FP), R8
	MOVQ codes+16(FP), SI
	MOVQ n+24(FP), CX
	VBROADCASTSS s+32(FP), Y15
	MOVL nan+36(FP), AX
	MOVD AX, X0
	VPBROADCASTD X0, Y14
	BCAST($0x7F, Y13)
	BCAST($0x80, Y12)
	BCAST($0x7B800000, Y11)
	BCAST($0xF, Y10)
	BCAST($1, Y9)
	BCAST($117, Y8)
	BCAST($0x7FFFFFFF, Y7)
	VANDPS Y7, Y15, Y7
	SHRQ $3, CX
	JZ done
	TESTQ R8, R8
	JZ vals
loop:
	VPMOVZXBD (SI), Y1
	VPAND Y13, Y1, Y2
	VPCMPEQD Y13, Y2, Y3
	VPSLLD $20, Y2, Y4
	VPAND Y12, Y1, Y5
	VPSLLD $24, Y5, Y5
	VPOR Y5, Y4, Y4
	VMULPS Y11, Y4, Y4
	VBLENDVPS Y3, Y14, Y4, Y4
	VMULPS Y15, Y4, Y4
	VMOVUPS Y4, (DI)
	VPSRLD $3, Y2, Y6
	VPMAXSD Y9, Y6, Y6
	VPADDD Y8, Y6, Y6
	VPSLLD $23, Y6, Y6
	VMULPS Y7, Y6, Y6
	VMOVUPS Y6, (R8)
	ADDQ $8, SI
	ADDQ $32, DI
	ADDQ $32, R8
	DECQ CX
	JNZ loop
	VZEROUPPER
	RET
vals:
	VPMOVZXBD (SI), Y1
	VPAND Y13, Y1, Y2
	VPCMPEQD Y13, Y2, Y3
	VPSLLD $20, Y2, Y4
	VPAND Y12, Y1, Y5
	VPSLLD $24, Y5, Y5
	VPOR Y5, Y4, Y4
	VMULPS Y11, Y4, Y4
	VBLENDVPS Y3, Y14, Y4, Y4
	VMULPS Y15, Y4, Y4
	VMOVUPS Y4, (DI)
	ADDQ $8, SI
	ADDQ $32, DI
	DECQ CX
	JNZ vals
	VZEROUPPER
done:
	RET

// func e4m3BlocksAVX2(dst, steps *float32, codes, scales *byte, blocks, width int, nan uint32) (done int)
// blocks runs of width (a multiple of 8) E4M3 codes, run i scaled by
// scales[i], as e4m3ScaledAVX2 decodes one; it stops before a NaN scale
// (the caller's loops do that run) and returns how many it did.
TEXT ·e4m3BlocksAVX2(SB), NOSPLIT, $0-64
	MOVQ dst+0(FP), DI
	MOVQ steps+8(FP), R8
	MOVQ codes+16(FP), SI
	MOVQ scales+24(FP), DX
	MOVQ blocks+32(FP), R9
	MOVQ width+40(FP), R10
	SHRQ $3, R10
	MOVL nan+48(FP), AX
	MOVD AX, X0
	VPBROADCASTD X0, Y14
	BCAST($0x7F, Y13)
	BCAST($0x80, Y12)
	BCAST($0x7B800000, Y11)
	BCAST($1, Y9)
	BCAST($117, Y8)
	BCAST($0x7FFFFFFF, Y10)
	XORQ R11, R11
e4block:
	CMPQ R11, R9
	JEQ e4out
	VBROADCASTSS (DX)(R11*4), Y15
	VUCOMISS X15, X15
	JPS e4out
	VANDPS Y10, Y15, Y7
	MOVQ R10, CX
	TESTQ R8, R8
	JZ e4vals
e4both:
	VPMOVZXBD (SI), Y1
	VPAND Y13, Y1, Y2
	VPCMPEQD Y13, Y2, Y3
	VPSLLD $20, Y2, Y4
	VPAND Y12, Y1, Y5
	VPSLLD $24, Y5, Y5
	VPOR Y5, Y4, Y4
	VMULPS Y11, Y4, Y4
	VBLENDVPS Y3, Y14, Y4, Y4
	VMULPS Y15, Y4, Y4
	VMOVUPS Y4, (DI)
	VPSRLD $3, Y2, Y6
	VPMAXSD Y9, Y6, Y6
	VPADDD Y8, Y6, Y6
	VPSLLD $23, Y6, Y6
	VMULPS Y7, Y6, Y6
	VMOVUPS Y6, (R8)
	ADDQ $8, SI
	ADDQ $32, DI
	ADDQ $32, R8
	DECQ CX
	JNZ e4both
	INCQ R11
	JMP e4block
e4vals:
	VPMOVZXBD (SI), Y1
	VPAND Y13, Y1, Y2
	VPCMPEQD Y13, Y2, Y3
	VPSLLD $20, Y2, Y4
	VPAND Y12, Y1, Y5
	VPSLLD $24, Y5, Y5
	VPOR Y5, Y4, Y4
	VMULPS Y11, Y4, Y4
	VBLENDVPS Y3, Y14, Y4, Y4
	VMULPS Y15, Y4, Y4
	VMOVUPS Y4, (DI)
	ADDQ $8, SI
	ADDQ $32, DI
	DECQ CX
	JNZ e4vals
	INCQ R11
	JMP e4block
e4out:
	MOVQ R11, done+56(FP)
	VZEROUPPER
	RET
