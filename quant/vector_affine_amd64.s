//go:build amd64 && !purego

#include "textflag.h"
#include "vector_amd64.h"

// The integer-affine decoders: GPTQ, AWQ, compressed-tensors pack-quantized
// and MLX int4 (a group's tables, then its words unpacked).

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
