//go:build amd64 && !purego

#include "textflag.h"

// BCAST broadcasts the 32-bit constant c into register y.
#define BCAST(c, y) \
	MOVL c, AX \
	MOVD AX, X0 \
	VPBROADCASTD X0, y

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

// func q8BlocksAVX2(dst, steps *float32, src *byte, f16 *[1 << 16]float32, n int)
// n Q8_0 blocks of 34 bytes, each's scale d looked up in the F16 table,
// four times eight codes a block: q·d; the step |d| + ((2|q|)·|d|)·2⁻¹¹,
// each product rounded, as stepsQ8_0 adds them.
TEXT ·q8BlocksAVX2(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ steps+8(FP), R8
	MOVQ src+16(FP), SI
	MOVQ f16+24(FP), DX
	MOVQ n+32(FP), R9
	BCAST($0x7FFFFFFF, Y12)
	BCAST($0x3A000000, Y13)
	TESTQ R9, R9
	JZ q8done
	TESTQ R8, R8
	JZ q8vals
q8block:
	MOVWLZX (SI), AX
	VBROADCASTSS (DX)(AX*4), Y15
	VANDPS Y12, Y15, Y14
	VPMOVSXBD 2(SI), Y0
	VPMOVSXBD 10(SI), Y1
	VPMOVSXBD 18(SI), Y2
	VPMOVSXBD 26(SI), Y3
	VCVTDQ2PS Y0, Y4
	VCVTDQ2PS Y1, Y5
	VCVTDQ2PS Y2, Y6
	VCVTDQ2PS Y3, Y7
	VMULPS Y15, Y4, Y4
	VMULPS Y15, Y5, Y5
	VMULPS Y15, Y6, Y6
	VMULPS Y15, Y7, Y7
	VMOVUPS Y4, 0(DI)
	VMOVUPS Y5, 32(DI)
	VMOVUPS Y6, 64(DI)
	VMOVUPS Y7, 96(DI)
	VPABSD Y0, Y0
	VPABSD Y1, Y1
	VPABSD Y2, Y2
	VPABSD Y3, Y3
	VPADDD Y0, Y0, Y0
	VPADDD Y1, Y1, Y1
	VPADDD Y2, Y2, Y2
	VPADDD Y3, Y3, Y3
	VCVTDQ2PS Y0, Y0
	VCVTDQ2PS Y1, Y1
	VCVTDQ2PS Y2, Y2
	VCVTDQ2PS Y3, Y3
	VMULPS Y14, Y0, Y0
	VMULPS Y14, Y1, Y1
	VMULPS Y14, Y2, Y2
	VMULPS Y14, Y3, Y3
	VMULPS Y13, Y0, Y0
	VMULPS Y13, Y1, Y1
	VMULPS Y13, Y2, Y2
	VMULPS Y13, Y3, Y3
	VADDPS Y0, Y14, Y0
	VADDPS Y1, Y14, Y1
	VADDPS Y2, Y14, Y2
	VADDPS Y3, Y14, Y3
	VMOVUPS Y0, 0(R8)
	VMOVUPS Y1, 32(R8)
	VMOVUPS Y2, 64(R8)
	VMOVUPS Y3, 96(R8)
	ADDQ $34, SI
	ADDQ $128, DI
	ADDQ $128, R8
	DECQ R9
	JNZ q8block
	VZEROUPPER
	RET
q8vals:
	MOVWLZX (SI), AX
	VBROADCASTSS (DX)(AX*4), Y15
	VPMOVSXBD 2(SI), Y0
	VPMOVSXBD 10(SI), Y1
	VPMOVSXBD 18(SI), Y2
	VPMOVSXBD 26(SI), Y3
	VCVTDQ2PS Y0, Y4
	VCVTDQ2PS Y1, Y5
	VCVTDQ2PS Y2, Y6
	VCVTDQ2PS Y3, Y7
	VMULPS Y15, Y4, Y4
	VMULPS Y15, Y5, Y5
	VMULPS Y15, Y6, Y6
	VMULPS Y15, Y7, Y7
	VMOVUPS Y4, 0(DI)
	VMOVUPS Y5, 32(DI)
	VMOVUPS Y6, 64(DI)
	VMOVUPS Y7, 96(DI)
	ADDQ $34, SI
	ADDQ $128, DI
	DECQ R9
	JNZ q8vals
	VZEROUPPER
q8done:
	RET

// func unpack4StridedAVX2(vals, steps *float32, qw *byte, stride, n uintptr, luts *affineLUTs)
// A word an iteration: its eight nibbles, shifted into their lanes, pick
// from the table's first eight entries and its second eight (VPERMPS
// takes the low three bits), the nibble's bit 3 choosing between them.
TEXT ·unpack4StridedAVX2(SB), NOSPLIT, $0-48
	MOVQ vals+0(FP), DI
	MOVQ steps+8(FP), R8
	MOVQ qw+16(FP), SI
	MOVQ stride+24(FP), BX
	MOVQ n+32(FP), CX
	MOVQ luts+40(FP), DX
	VMOVUPS 0(DX), Y8
	VMOVUPS 32(DX), Y9
	VMOVUPS 1024(DX), Y10
	VMOVUPS 1056(DX), Y11
	MOVL $0x1C181410, AX
	MOVD AX, X0
	MOVL $0x0C080400, AX
	MOVD AX, X1
	VPUNPCKLDQ X0, X1, X0
	VPMOVZXBD X0, Y12
	BCAST($0xF, Y13)
	TESTQ CX, CX
	JZ u4done
	TESTQ R8, R8
	JZ u4vals
u4loop:
	VPBROADCASTD (SI), Y1
	VPSRLVD Y12, Y1, Y1
	VPAND Y13, Y1, Y1
	VPSLLD $28, Y1, Y2
	VPERMPS Y8, Y1, Y3
	VPERMPS Y9, Y1, Y4
	VBLENDVPS Y2, Y4, Y3, Y3
	VMOVUPS Y3, (DI)
	VPERMPS Y10, Y1, Y3
	VPERMPS Y11, Y1, Y4
	VBLENDVPS Y2, Y4, Y3, Y3
	VMOVUPS Y3, (R8)
	ADDQ BX, SI
	ADDQ $32, DI
	ADDQ $32, R8
	DECQ CX
	JNZ u4loop
	VZEROUPPER
	RET
u4vals:
	VPBROADCASTD (SI), Y1
	VPSRLVD Y12, Y1, Y1
	VPAND Y13, Y1, Y1
	VPSLLD $28, Y1, Y2
	VPERMPS Y8, Y1, Y3
	VPERMPS Y9, Y1, Y4
	VBLENDVPS Y2, Y4, Y3, Y3
	VMOVUPS Y3, (DI)
	ADDQ BX, SI
	ADDQ $32, DI
	DECQ CX
	JNZ u4vals
	VZEROUPPER
u4done:
	RET

// func q4kBlocksAVX2(y, steps *float32, src *byte, f16 *[1 << 16]float32, n int)
// n Q4_K blocks of 144 bytes. A block's eight 6-bit scales and mins come
// out of its 12 packed bytes as four words (get_scale_min_k4's bytes, a
// word at a time), widen to lanes and take d and dmin: d·sc and dmin·m,
// kept on the stack. Then four pairs of sub-blocks, eight code bytes at a
// time: the low nibbles are the first sub-block's values, the high ones
// the second's, (d·sc)·q − dmin·m each rounded; and each sub-block's step
// |d·sc| + ((30·|d·sc|)·2⁻¹¹) (step(d·sc, 15)), broadcast into its 32
// steps.
TEXT ·q4kBlocksAVX2(SB), NOSPLIT, $96-40
	MOVQ y+0(FP), DI
	MOVQ steps+8(FP), R8
	MOVQ src+16(FP), SI
	MOVQ f16+24(FP), DX
	MOVQ n+32(FP), R9
	LEAQ 0(SP), R12
	BCAST($0xF, Y14)
	BCAST($0x7FFFFFFF, Y13)
	BCAST($0x41F00000, Y12)
	BCAST($0x3A000000, Y11)
	TESTQ R9, R9
	JZ q4kdone
q4kblock:
	MOVWLZX 0(SI), AX
	VBROADCASTSS (DX)(AX*4), Y10
	MOVWLZX 2(SI), AX
	VBROADCASTSS (DX)(AX*4), Y9
	MOVL 4(SI), AX
	MOVL 8(SI), BX
	MOVL 12(SI), CX
	MOVL AX, R10
	ANDL $0x3F3F3F3F, R10
	MOVL CX, R11
	ANDL $0x0F0F0F0F, R11
	SHRL $2, AX
	ANDL $0x30303030, AX
	ORL AX, R11
	SHLQ $32, R11
	ORQ R11, R10
	MOVL BX, R11
	ANDL $0x3F3F3F3F, R11
	SHRL $4, CX
	ANDL $0x0F0F0F0F, CX
	SHRL $2, BX
	ANDL $0x30303030, BX
	ORL BX, CX
	SHLQ $32, CX
	ORQ CX, R11
	MOVQ R10, X0
	VPMOVZXBD X0, Y0
	VCVTDQ2PS Y0, Y0
	VMULPS Y10, Y0, Y0
	VMOVUPS Y0, 0(R12)
	MOVQ R11, X1
	VPMOVZXBD X1, Y1
	VCVTDQ2PS Y1, Y1
	VMULPS Y9, Y1, Y1
	VMOVUPS Y1, 32(R12)
	TESTQ R8, R8
	JZ q4kcodes
	VANDPS Y13, Y0, Y0
	VMULPS Y12, Y0, Y2
	VMULPS Y11, Y2, Y2
	VADDPS Y2, Y0, Y0
	VMOVUPS Y0, 64(R12)
q4kcodes:
	LEAQ 16(SI), R10
	XORQ BX, BX
q4kpair:
	VBROADCASTSS 0(R12)(BX*1), Y5
	VBROADCASTSS 32(R12)(BX*1), Y6
	VBROADCASTSS 4(R12)(BX*1), Y7
	VBROADCASTSS 36(R12)(BX*1), Y8
	MOVQ $4, CX
q4koct:
	VPMOVZXBD (R10), Y1
	VPAND Y14, Y1, Y2
	VCVTDQ2PS Y2, Y2
	VMULPS Y5, Y2, Y2
	VSUBPS Y6, Y2, Y2
	VMOVUPS Y2, (DI)
	VPSRLD $4, Y1, Y3
	VCVTDQ2PS Y3, Y3
	VMULPS Y7, Y3, Y3
	VSUBPS Y8, Y3, Y3
	VMOVUPS Y3, 128(DI)
	ADDQ $8, R10
	ADDQ $32, DI
	DECQ CX
	JNZ q4koct
	ADDQ $128, DI
	TESTQ R8, R8
	JZ q4knext
	VBROADCASTSS 64(R12)(BX*1), Y4
	VBROADCASTSS 68(R12)(BX*1), Y3
	VMOVUPS Y4, 0(R8)
	VMOVUPS Y4, 32(R8)
	VMOVUPS Y4, 64(R8)
	VMOVUPS Y4, 96(R8)
	VMOVUPS Y3, 128(R8)
	VMOVUPS Y3, 160(R8)
	VMOVUPS Y3, 192(R8)
	VMOVUPS Y3, 224(R8)
	ADDQ $256, R8
q4knext:
	ADDQ $8, BX
	CMPQ BX, $32
	JNE q4kpair
	ADDQ $144, SI
	DECQ R9
	JNZ q4kblock
	VZEROUPPER
q4kdone:
	RET

// F16ROUND rounds Y2 to F16 by its bits, in place, and ANDs into Y9 the
// lanes that are zero or round to a normal F16 (those the bits' way gets
// right). Uses Y3 to Y6; Y0 is zero.
#define F16ROUND \
	VANDPS Y14, Y2, Y3 \
	VPCMPEQD Y0, Y3, Y4 \
	VPCMPGTD Y13, Y3, Y5 \
	VPCMPGTD Y12, Y3, Y6 \
	VPANDN Y5, Y6, Y5 \
	VPOR Y5, Y4, Y4 \
	VPAND Y4, Y9, Y9 \
	VPSRLD $13, Y2, Y3 \
	VPAND Y11, Y3, Y3 \
	VPADDD Y10, Y3, Y3 \
	VPADDD Y3, Y2, Y2 \
	VPAND Y8, Y2, Y2

// F16LANES rounds the products q·s of Y1 (codes as int32, z taken off) to
// F16 by their bits into Y2, and ANDs into Y9 the lanes whose product
// is zero or rounds to a normal F16. Uses Y3 to Y6.
#define F16LANES \
	VCVTDQ2PS Y1, Y2 \
	VMULPS Y15, Y2, Y2 \
	F16ROUND

// func fill16F16AVX2(l *affineLUTs, z int32, s float32, steps bool) bool
TEXT ·fill16F16AVX2(SB), NOSPLIT, $0-25
	MOVQ l+0(FP), DI
	MOVL z+8(FP), AX
	MOVD AX, X0
	VPBROADCASTD X0, Y7
	VBROADCASTSS s+12(FP), Y15
	BCAST($0x7FFFFFFF, Y14)
	BCAST($0x387FFFFF, Y13)
	BCAST($0x477FEFFF, Y12)
	BCAST($1, Y11)
	BCAST($0xFFF, Y10)
	BCAST($0xFFFFE000, Y8)
	VPCMPEQD Y9, Y9, Y9
	// the codes 0..7 and 8..15, z taken off
	MOVQ $0x0706050403020100, AX
	MOVQ AX, X0
	VPMOVZXBD X0, Y1
	VPSUBD Y7, Y1, Y1
	VPXOR Y0, Y0, Y0
	F16LANES
	VMOVUPS Y2, 0(DI)
	VMOVUPS Y2, Y6
	MOVQ $0x0F0E0D0C0B0A0908, AX
	MOVQ AX, X0
	VPMOVZXBD X0, Y1
	VPSUBD Y7, Y1, Y1
	VPXOR Y0, Y0, Y0
	VMOVUPS Y6, Y7
	F16LANES
	VMOVUPS Y2, 32(DI)
	VMOVMSKPS Y9, AX
	CMPL AX, $0xFF
	JNE f16fail
	MOVB steps+16(FP), AX
	TESTB AL, AL
	JZ f16ok
	// steps: |s| + 2⁻¹⁰·|v|
	VANDPS Y14, Y15, Y15
	BCAST($0x3A800000, Y13)
	VANDPS Y14, Y7, Y3
	VMULPS Y13, Y3, Y3
	VADDPS Y3, Y15, Y3
	VMOVUPS Y3, 1024(DI)
	VANDPS Y14, Y2, Y3
	VMULPS Y13, Y3, Y3
	VADDPS Y3, Y15, Y3
	VMOVUPS Y3, 1056(DI)
f16ok:
	MOVB $1, ret+24(FP)
	VZEROUPPER
	RET
f16fail:
	MOVB $0, ret+24(FP)
	VZEROUPPER
	RET

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

DATA q4shifts<>+0(SB)/8, $0x1C1814100C080400
GLOBL q4shifts<>(SB), RODATA|NOPTR, $8
DATA q4codes<>+0(SB)/8, $0x0706050403020100
DATA q4codes<>+8(SB)/8, $0x0F0E0D0C0B0A0908
GLOBL q4codes<>(SB), RODATA|NOPTR, $16
DATA f16consts<>+0(SB)/4, $0x7FFFFFFF
DATA f16consts<>+4(SB)/4, $0x387FFFFF
DATA f16consts<>+8(SB)/4, $0x477FEFFF
DATA f16consts<>+12(SB)/4, $1
DATA f16consts<>+16(SB)/4, $0xFFF
DATA f16consts<>+20(SB)/4, $0xFFFFE000
DATA f16consts<>+24(SB)/4, $0x3A800000
DATA f16consts<>+28(SB)/4, $0xF
GLOBL f16consts<>(SB), RODATA|NOPTR, $32

DATA bf16consts<>+0(SB)/4, $0x7F800000
DATA bf16consts<>+4(SB)/4, $0x7FC00000
DATA bf16consts<>+8(SB)/4, $0x7FFF
DATA bf16consts<>+12(SB)/4, $0xFFFF0000
DATA bf16consts<>+16(SB)/4, $0x3C000000
GLOBL bf16consts<>(SB), RODATA|NOPTR, $20

// BF16ROUND rounds Y2 to BF16 by its bits, in place, as roundBF16 does: a
// NaN becomes the canonical NaN. Uses Y3 and Y4.
#define BF16ROUND \
	VANDPS Y14, Y2, Y3 \
	VPCMPGTD Y13, Y3, Y3 \
	VPSRLD $16, Y2, Y4 \
	VPAND Y11, Y4, Y4 \
	VPADDD Y10, Y4, Y4 \
	VPADDD Y4, Y2, Y2 \
	VPAND Y8, Y2, Y2 \
	VBLENDVPS Y3, Y12, Y2, Y2

// BF16LANES rounds the products q·s of Y1 (codes as int32, z taken off) to
// BF16 by their bits into Y2 (a NaN product, 0·∞, becomes the canonical
// NaN). Uses Y3 and Y4.
#define BF16LANES \
	VCVTDQ2PS Y1, Y2 \
	VMULPS Y15, Y2, Y2 \
	BF16ROUND

// func unpack4GroupsAVX2(vals, steps *float32, qw *byte, stride, words uintptr, zs *int32, ss *float32, n uintptr, luts *affineLUTs, bf16 bool) (done uintptr)
// n 4-bit groups of words words each, stride bytes apart from qw, group i
// with zero zs[i] and scale ss[i] of F16 (or BF16, when bf16): each
// group's tables filled as fill16F16AVX2 fills them, or as zeroScaleLUT
// does with BF16 (into luts), then its words unpacked as
// unpack4StridedAVX2 does, each step computed from its value as the table
// would hold it (|s| + 2u·|v|, u the dtype's unit roundoff). It stops at
// a group it cannot fill so (F16: a product that does not round to a
// normal F16 or zero; BF16: a NaN scale) and returns how many it did.
TEXT ·unpack4GroupsAVX2(SB), NOSPLIT, $0-88
	MOVQ vals+0(FP), DI
	MOVQ steps+8(FP), R8
	MOVQ qw+16(FP), SI
	MOVQ stride+24(FP), BX
	MOVQ words+32(FP), R9
	MOVQ zs+40(FP), R10
	MOVQ ss+48(FP), R11
	MOVQ n+56(FP), R13
	MOVQ luts+64(FP), DX
	XORQ R14, R14
g4group:
	CMPQ R14, R13
	JEQ g4out
	VPBROADCASTD (R10)(R14*4), Y7
	VBROADCASTSS (R11)(R14*4), Y15
	VPBROADCASTD f16consts<>+0(SB), Y14
	VPBROADCASTD f16consts<>+12(SB), Y11
	CMPB bf16+72(FP), $0
	JNE g4bf16
	VPBROADCASTD f16consts<>+4(SB), Y13
	VPBROADCASTD f16consts<>+8(SB), Y12
	VPBROADCASTD f16consts<>+16(SB), Y10
	VPBROADCASTD f16consts<>+20(SB), Y8
	VPCMPEQD Y9, Y9, Y9
	VPMOVZXBD q4codes<>+0(SB), Y1
	VPSUBD Y7, Y1, Y1
	VPXOR Y0, Y0, Y0
	F16LANES
	VMOVUPS Y2, 0(DX)
	VMOVUPS Y2, Y6
	VPMOVZXBD q4codes<>+8(SB), Y1
	VPSUBD Y7, Y1, Y1
	VPXOR Y0, Y0, Y0
	VMOVUPS Y6, Y7
	F16LANES
	VMOVUPS Y2, 32(DX)
	VMOVMSKPS Y9, AX
	CMPL AX, $0xFF
	JNE g4out
	VPBROADCASTD f16consts<>+24(SB), Y0
	JMP g4unpack
g4bf16:
	VUCOMISS X15, X15
	JPS g4out
	VPBROADCASTD bf16consts<>+0(SB), Y13
	VPBROADCASTD bf16consts<>+4(SB), Y12
	VPBROADCASTD bf16consts<>+8(SB), Y10
	VPBROADCASTD bf16consts<>+12(SB), Y8
	VPMOVZXBD q4codes<>+0(SB), Y1
	VPSUBD Y7, Y1, Y1
	BF16LANES
	VMOVUPS Y2, 0(DX)
	VPMOVZXBD q4codes<>+8(SB), Y1
	VPSUBD Y7, Y1, Y1
	BF16LANES
	VMOVUPS Y2, 32(DX)
	VPBROADCASTD bf16consts<>+16(SB), Y0
g4unpack:
	VPMOVZXBD q4shifts<>(SB), Y12
	VPBROADCASTD f16consts<>+28(SB), Y13
	VMOVUPS 0(DX), Y8
	VMOVUPS 32(DX), Y9
	MOVQ R9, CX
	TESTQ R8, R8
	JZ g4vals
	// steps: |s| + 2u·|v|, computed from each value as the tables hold
	// it (fewer shuffles than a second lookup)
	VANDPS Y14, Y15, Y15
g4both:
	VPBROADCASTD (SI), Y1
	VPSRLVD Y12, Y1, Y1
	VPAND Y13, Y1, Y1
	VPSLLD $28, Y1, Y2
	VPERMPS Y8, Y1, Y3
	VPERMPS Y9, Y1, Y4
	VBLENDVPS Y2, Y4, Y3, Y3
	VMOVUPS Y3, (DI)
	VANDPS Y14, Y3, Y3
	VMULPS Y0, Y3, Y3
	VADDPS Y3, Y15, Y3
	VMOVUPS Y3, (R8)
	ADDQ BX, SI
	ADDQ $32, DI
	ADDQ $32, R8
	DECQ CX
	JNZ g4both
	INCQ R14
	JMP g4group
g4vals:
	VPBROADCASTD (SI), Y1
	VPSRLVD Y12, Y1, Y1
	VPAND Y13, Y1, Y1
	VPSLLD $28, Y1, Y2
	VPERMPS Y8, Y1, Y3
	VPERMPS Y9, Y1, Y4
	VBLENDVPS Y2, Y4, Y3, Y3
	VMOVUPS Y3, (DI)
	ADDQ BX, SI
	ADDQ $32, DI
	DECQ CX
	JNZ g4vals
	INCQ R14
	JMP g4group
g4out:
	MOVQ R14, done+80(FP)
	VZEROUPPER
	RET

// AWQROW writes row j's eight values of the columns in Y0's words, its
// code at bit sh, through its value table at off(DX), to (R10): seven
// instructions, which AWQVALS and AWQBOTH jump over for a row not wanted.
#define AWQROW(sh, off) \
	VPSRLD $sh, Y0, Y1 \
	VPAND Y13, Y1, Y1 \
	VPSLLD $28, Y1, Y2 \
	VPERMPS off(DX), Y1, Y3 \
	VPERMPS off+32(DX), Y1, Y4 \
	VBLENDVPS Y2, Y4, Y3, Y3 \
	VMOVUPS Y3, (R10)

// AWQVALS is AWQROW for row j when bit j of R12 is set; R10 moves on a
// row (BX bytes) either way.
#define AWQVALS(j, sh, off) \
	BTL $j, R12 \
	JCC 8(PC) \
	AWQROW(sh, off) \
	ADDQ BX, R10

// AWQBOTH is AWQVALS that also writes the row's steps, through its step
// table, to (R11) (four instructions more), and moves R11 on a row.
#define AWQBOTH(j, sh, off) \
	BTL $j, R12 \
	JCC 12(PC) \
	AWQROW(sh, off) \
	VPERMPS off+1024(DX), Y1, Y3 \
	VPERMPS off+1056(DX), Y1, Y4 \
	VBLENDVPS Y2, Y4, Y3, Y3 \
	VMOVUPS Y3, (R11) \
	ADDQ BX, R10 \
	ADDQ BX, R11

// func awqRows8AVX2(vals, steps *float32, first, rowBytes uintptr, qw *byte, idx *[8]int32, next, octets, rows uintptr, luts *[8]affineLUTs)
// octets times eight columns of AWQ words, eight rows a word: the eight
// words gathered (idx their offsets from qw, in words; the next eight
// next bytes on), and each row j's codes, at nibble [0, 4, 1, 5, 2, 6, 3,
// 7][j], through row j's tables, into its row of vals (rowBytes apart)
// and, unless steps is nil, of steps: the rows whose bit is set in rows.
// vals and steps point at row first, the first of them; the row pointers
// start first rows before (never written there) and move on row by row.
TEXT ·awqRows8AVX2(SB), NOSPLIT, $0-80
	MOVQ vals+0(FP), DI
	MOVQ steps+8(FP), R8
	MOVQ first+16(FP), R13
	MOVQ rowBytes+24(FP), BX
	IMULQ BX, R13
	SUBQ R13, DI
	MOVQ qw+32(FP), SI
	MOVQ next+48(FP), R9
	MOVQ octets+56(FP), CX
	MOVQ rows+64(FP), R12
	MOVQ luts+72(FP), DX
	BCAST($0xF, Y13)
	MOVQ idx+40(FP), R10
	VMOVDQU (R10), Y15
	TESTQ CX, CX
	JZ awqdone
	TESTQ R8, R8
	JZ awqvals
	SUBQ R13, R8
awqboth:
	VPCMPEQD Y14, Y14, Y14
	VPXOR Y0, Y0, Y0
	VPGATHERDD Y14, (SI)(Y15*4), Y0
	MOVQ DI, R10
	MOVQ R8, R11
	AWQBOTH(0, 0, 0)
	AWQBOTH(1, 16, 2048)
	AWQBOTH(2, 4, 4096)
	AWQBOTH(3, 20, 6144)
	AWQBOTH(4, 8, 8192)
	AWQBOTH(5, 24, 10240)
	AWQBOTH(6, 12, 12288)
	AWQBOTH(7, 28, 14336)
	ADDQ R9, SI
	ADDQ $32, DI
	ADDQ $32, R8
	DECQ CX
	JNZ awqboth
	VZEROUPPER
	RET
awqvals:
	VPCMPEQD Y14, Y14, Y14
	VPXOR Y0, Y0, Y0
	VPGATHERDD Y14, (SI)(Y15*4), Y0
	MOVQ DI, R10
	AWQVALS(0, 0, 0)
	AWQVALS(1, 16, 2048)
	AWQVALS(2, 4, 4096)
	AWQVALS(3, 20, 6144)
	AWQVALS(4, 8, 8192)
	AWQVALS(5, 24, 10240)
	AWQVALS(6, 12, 12288)
	AWQVALS(7, 28, 14336)
	ADDQ R9, SI
	ADDQ $32, DI
	DECQ CX
	JNZ awqvals
	VZEROUPPER
awqdone:
	RET

// MLXHALF16 and MLXHALFB16 fill eight entries (codes from q4codes+c,
// tables at off(DI)) of an MLX group's tables: P = round(q·s), kept in
// the step table for the steps, and the value round(P + b), each rounding
// to F16 (checked into Y9) or to BF16.
#define MLXHALF16(c, off) \
	VPMOVZXBD q4codes<>+c(SB), Y1 \
	VCVTDQ2PS Y1, Y2 \
	VMULPS Y15, Y2, Y2 \
	F16ROUND \
	VMOVUPS Y2, 1024+off(DI) \
	VADDPS Y7, Y2, Y2 \
	F16ROUND \
	VMOVUPS Y2, off(DI)

#define MLXHALFB16(c, off) \
	VPMOVZXBD q4codes<>+c(SB), Y1 \
	VCVTDQ2PS Y1, Y2 \
	VMULPS Y15, Y2, Y2 \
	BF16ROUND \
	VMOVUPS Y2, 1024+off(DI) \
	VADDPS Y7, Y2, Y2 \
	BF16ROUND \
	VMOVUPS Y2, off(DI)

// MLXSTEPS turns the eight P at 1024+off(DI) into steps (|s| + 2u·|P|) +
// 2u·|v|, v the values at off(DI); Y15 is |s|, Y1 2u.
#define MLXSTEPS(off) \
	VMOVUPS 1024+off(DI), Y2 \
	VANDPS Y14, Y2, Y2 \
	VMULPS Y1, Y2, Y2 \
	VADDPS Y2, Y15, Y2 \
	VMOVUPS off(DI), Y3 \
	VANDPS Y14, Y3, Y3 \
	VMULPS Y1, Y3, Y3 \
	VADDPS Y3, Y2, Y2 \
	VMOVUPS Y2, 1024+off(DI)

// func mlxFill16AVX2(l *affineLUTs, s, b float32, bf16, steps bool) (ok bool)
// An MLX 4-bit group's tables for scale s and bias b (neither a NaN):
// round(round(q·s) + b) in F16 or, when bf16, BF16, and, when steps, each
// code's step; false, the tables then not to be used, when an F16
// rounding is not the bits' way.
TEXT ·mlxFill16AVX2(SB), NOSPLIT, $0-25
	MOVQ l+0(FP), DI
	VBROADCASTSS s+8(FP), Y15
	VBROADCASTSS b+12(FP), Y7
	VPBROADCASTD f16consts<>+0(SB), Y14
	VPBROADCASTD f16consts<>+12(SB), Y11
	VPCMPEQD Y9, Y9, Y9
	CMPB bf16+16(FP), $0
	JNE mlxbf16
	VPBROADCASTD f16consts<>+4(SB), Y13
	VPBROADCASTD f16consts<>+8(SB), Y12
	VPBROADCASTD f16consts<>+16(SB), Y10
	VPBROADCASTD f16consts<>+20(SB), Y8
	VPXOR Y0, Y0, Y0
	MLXHALF16(0, 0)
	MLXHALF16(8, 32)
	VMOVMSKPS Y9, AX
	CMPL AX, $0xFF
	JNE mlxfail
	VPBROADCASTD f16consts<>+24(SB), Y1
	JMP mlxsteps
mlxbf16:
	VPBROADCASTD bf16consts<>+0(SB), Y13
	VPBROADCASTD bf16consts<>+4(SB), Y12
	VPBROADCASTD bf16consts<>+8(SB), Y10
	VPBROADCASTD bf16consts<>+12(SB), Y8
	MLXHALFB16(0, 0)
	MLXHALFB16(8, 32)
	VPBROADCASTD bf16consts<>+16(SB), Y1
mlxsteps:
	CMPB steps+17(FP), $0
	JEQ mlxok
	VANDPS Y14, Y15, Y15
	MLXSTEPS(0)
	MLXSTEPS(32)
mlxok:
	MOVB $1, ok+24(FP)
	VZEROUPPER
	RET
mlxfail:
	MOVB $0, ok+24(FP)
	VZEROUPPER
	RET

// func cpuid(leaf, sub uint32) (a, b, c, d uint32)
TEXT ·cpuid(SB), NOSPLIT, $0-24
	MOVL leaf+0(FP), AX
	MOVL sub+4(FP), CX
	CPUID
	MOVL AX, a+8(FP)
	MOVL BX, b+12(FP)
	MOVL CX, c+16(FP)
	MOVL DX, d+20(FP)
	RET

// func xgetbv() (lo uint32)
TEXT ·xgetbv(SB), NOSPLIT, $0-4
	MOVL $0, CX
	XGETBV
	MOVL AX, lo+0(FP)
	RET
