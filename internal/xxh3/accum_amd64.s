#include "textflag.h"

// The AVX2 and AVX-512 accumulates of XXH3 (xxhash.h's
// XXH3_accumulate_512_avx2/avx512 and XXH3_scrambleAcc_avx2/avx512).
// With AVX2 the eight 64-bit accumulators live in Y0 (lanes 0-3) and Y1
// (lanes 4-7); the products go there, the swapped inputs into Y8 and Y9
// so that the two chains of additions run side by side; they are summed
// before a scramble and at the end.

// STRIPE accumulates the stripe at SI with the secret at DX: keyed =
// input ^ secret; the accumulators add lo32(keyed) * hi32(keyed)
// (VPMULUDQ of keyed and keyed>>32) and the input with its 64-bit lanes
// swapped in pairs (VPSHUFD $0x4e).
#define STRIPE \
	VMOVDQU  (SI), Y2;        \
	VMOVDQU  32(SI), Y3;      \
	VPXOR    (DX), Y2, Y4; \
	VPXOR    32(DX), Y3, Y5;  \
	VPSRLQ   $32, Y4, Y6; \
	VPSRLQ   $32, Y5, Y7;     \
	VPMULUDQ Y4, Y6, Y4; \
	VPMULUDQ Y5, Y7, Y5;      \
	VPSHUFD  $0x4e, Y2, Y2; \
	VPSHUFD  $0x4e, Y3, Y3;   \
	VPADDQ   Y4, Y0, Y0;      \
	VPADDQ   Y5, Y1, Y1;      \
	VPADDQ   Y2, Y8, Y8;      \
	VPADDQ   Y3, Y9, Y9

// func accumulateAVX2(acc *[8]uint64, data, secret *byte, stripes int)
TEXT ·accumulateAVX2(SB), NOSPLIT, $0-32
	MOVQ    acc+0(FP), AX
	MOVQ    data+8(FP), SI
	MOVQ    secret+16(FP), DX
	MOVQ    stripes+24(FP), CX
	VMOVDQU (AX), Y0
	VMOVDQU 32(AX), Y1
	VPXOR   Y8, Y8, Y8
	VPXOR   Y9, Y9, Y9
	TESTQ   CX, CX
	JZ      done

loop:
	STRIPE
	ADDQ $64, SI
	ADDQ $8, DX
	DECQ CX
	JNZ  loop

done:
	VPADDQ  Y8, Y0, Y0
	VPADDQ  Y9, Y1, Y1
	VMOVDQU Y0, (AX)
	VMOVDQU Y1, 32(AX)
	VZEROUPPER
	RET

// STRIPEAT is STRIPE for the stripe at off(SI) with the secret at
// koff(BX).
#define STRIPEAT(off, koff) \
	VMOVDQU  off(SI), Y2;          \
	VMOVDQU  (off+32)(SI), Y3;     \
	VPXOR    koff(BX), Y2, Y4;     \
	VPXOR    (koff+32)(BX), Y3, Y5; \
	VPSRLQ   $32, Y4, Y6;          \
	VPSRLQ   $32, Y5, Y7;          \
	VPMULUDQ Y4, Y6, Y4;           \
	VPMULUDQ Y5, Y7, Y5;           \
	VPSHUFD  $0x4e, Y2, Y2;        \
	VPSHUFD  $0x4e, Y3, Y3;        \
	VPADDQ   Y4, Y0, Y0;           \
	VPADDQ   Y5, Y1, Y1;           \
	VPADDQ   Y2, Y8, Y8;           \
	VPADDQ   Y3, Y9, Y9

// func accumulateBlocksAVX2(acc *[8]uint64, data *byte, secret *[192]byte, blocks int)
TEXT ·accumulateBlocksAVX2(SB), NOSPLIT, $0-32
	MOVQ         acc+0(FP), AX
	MOVQ         data+8(FP), SI
	MOVQ         secret+16(FP), BX
	MOVQ         blocks+24(FP), R8
	VMOVDQU      (AX), Y0
	VMOVDQU      32(AX), Y1
	MOVQ         $0x9E3779B1, R9 // PRIME32_1
	MOVQ         R9, X14
	VPBROADCASTQ X14, Y14
	VMOVDQU      128(BX), Y12 // the scramble's secret
	VMOVDQU      160(BX), Y13

block:
	VPXOR Y8, Y8, Y8
	VPXOR Y9, Y9, Y9
	STRIPEAT(0, 0)
	STRIPEAT(64, 8)
	STRIPEAT(128, 16)
	STRIPEAT(192, 24)
	STRIPEAT(256, 32)
	STRIPEAT(320, 40)
	STRIPEAT(384, 48)
	STRIPEAT(448, 56)
	STRIPEAT(512, 64)
	STRIPEAT(576, 72)
	STRIPEAT(640, 80)
	STRIPEAT(704, 88)
	STRIPEAT(768, 96)
	STRIPEAT(832, 104)
	STRIPEAT(896, 112)
	STRIPEAT(960, 120)
	ADDQ   $1024, SI
	VPADDQ Y8, Y0, Y0
	VPADDQ Y9, Y1, Y1

	// Scramble: acc = (acc ^ acc>>47 ^ secret[128:192]) * PRIME32_1, the
	// 64-bit product made of two 32-bit ones.
	VPSRLQ   $47, Y0, Y2
	VPSRLQ   $47, Y1, Y3
	VPXOR    Y2, Y0, Y0
	VPXOR    Y3, Y1, Y1
	VPXOR    Y12, Y0, Y0
	VPXOR    Y13, Y1, Y1
	VPSRLQ   $32, Y0, Y2
	VPSRLQ   $32, Y1, Y3
	VPMULUDQ Y14, Y0, Y0
	VPMULUDQ Y14, Y1, Y1
	VPMULUDQ Y14, Y2, Y2
	VPMULUDQ Y14, Y3, Y3
	VPSLLQ   $32, Y2, Y2
	VPSLLQ   $32, Y3, Y3
	VPADDQ   Y2, Y0, Y0
	VPADDQ   Y3, Y1, Y1

	DECQ R8
	JNZ  block

	VMOVDQU Y0, (AX)
	VMOVDQU Y1, 32(AX)
	VZEROUPPER
	RET

// STRIPE512 is STRIPE with the eight accumulators in one register, Z0
// (products) and Z1 (swapped inputs).
#define STRIPE512 \
	VMOVDQU64 (SI), Z2;      \
	VPXORQ    (DX), Z2, Z3;  \
	VPSRLQ    $32, Z3, Z4;   \
	VPMULUDQ  Z3, Z4, Z3;    \
	VPSHUFD   $0x4e, Z2, Z2; \
	VPADDQ    Z3, Z0, Z0;    \
	VPADDQ    Z2, Z1, Z1

// func accumulateAVX512(acc *[8]uint64, data, secret *byte, stripes int)
TEXT ·accumulateAVX512(SB), NOSPLIT, $0-32
	MOVQ      acc+0(FP), AX
	MOVQ      data+8(FP), SI
	MOVQ      secret+16(FP), DX
	MOVQ      stripes+24(FP), CX
	VMOVDQU64 (AX), Z0
	VPXORQ    Z1, Z1, Z1
	TESTQ     CX, CX
	JZ        done512

loop512:
	STRIPE512
	ADDQ $64, SI
	ADDQ $8, DX
	DECQ CX
	JNZ  loop512

done512:
	VPADDQ    Z1, Z0, Z0
	VMOVDQU64 Z0, (AX)
	VZEROUPPER
	RET

// STRIPE512KEY is STRIPE512 for the stripe at off(SI) with the secret
// already in register key, adding into prod and swap: the block loop
// takes turns between two pairs, so that no chain of additions waits on
// the one before.
#define STRIPE512KEY(off, key, prod, swap) \
	VMOVDQU64 off(SI), Z2;   \
	VPXORQ    key, Z2, Z3;   \
	VPSRLQ    $32, Z3, Z4;   \
	VPMULUDQ  Z3, Z4, Z3;    \
	VPSHUFD   $0x4e, Z2, Z2; \
	VPADDQ    Z3, prod, prod; \
	VPADDQ    Z2, swap, swap

// func accumulateBlocksAVX512(acc *[8]uint64, data *byte, secret *[192]byte, blocks int)
//
// The sixteen stripes' secrets stay in Z16-Z31 and the scramble's in Z15:
// loaded once, not split across cache lines at every block.
TEXT ·accumulateBlocksAVX512(SB), NOSPLIT, $0-32
	MOVQ         acc+0(FP), AX
	MOVQ         data+8(FP), SI
	MOVQ         secret+16(FP), BX
	MOVQ         blocks+24(FP), R8
	VMOVDQU64    (AX), Z0
	MOVQ         $0x9E3779B1, R9 // PRIME32_1
	MOVQ         R9, X14
	VPBROADCASTQ X14, Z14
	VMOVDQU64    0(BX), Z16
	VMOVDQU64    8(BX), Z17
	VMOVDQU64    16(BX), Z18
	VMOVDQU64    24(BX), Z19
	VMOVDQU64    32(BX), Z20
	VMOVDQU64    40(BX), Z21
	VMOVDQU64    48(BX), Z22
	VMOVDQU64    56(BX), Z23
	VMOVDQU64    64(BX), Z24
	VMOVDQU64    72(BX), Z25
	VMOVDQU64    80(BX), Z26
	VMOVDQU64    88(BX), Z27
	VMOVDQU64    96(BX), Z28
	VMOVDQU64    104(BX), Z29
	VMOVDQU64    112(BX), Z30
	VMOVDQU64    120(BX), Z31
	VMOVDQU64    128(BX), Z15

block512:
	VPXORQ Z1, Z1, Z1
	VPXORQ Z5, Z5, Z5
	VPXORQ Z6, Z6, Z6
	STRIPE512KEY(0, Z16, Z0, Z1)
	STRIPE512KEY(64, Z17, Z5, Z6)
	STRIPE512KEY(128, Z18, Z0, Z1)
	STRIPE512KEY(192, Z19, Z5, Z6)
	STRIPE512KEY(256, Z20, Z0, Z1)
	STRIPE512KEY(320, Z21, Z5, Z6)
	STRIPE512KEY(384, Z22, Z0, Z1)
	STRIPE512KEY(448, Z23, Z5, Z6)
	STRIPE512KEY(512, Z24, Z0, Z1)
	STRIPE512KEY(576, Z25, Z5, Z6)
	STRIPE512KEY(640, Z26, Z0, Z1)
	STRIPE512KEY(704, Z27, Z5, Z6)
	STRIPE512KEY(768, Z28, Z0, Z1)
	STRIPE512KEY(832, Z29, Z5, Z6)
	STRIPE512KEY(896, Z30, Z0, Z1)
	STRIPE512KEY(960, Z31, Z5, Z6)
	ADDQ   $1024, SI
	VPADDQ Z1, Z0, Z0
	VPADDQ Z6, Z5, Z5
	VPADDQ Z5, Z0, Z0

	// The scramble, as in accumulateBlocksAVX2.
	VPSRLQ   $47, Z0, Z2
	VPXORQ   Z2, Z0, Z0
	VPXORQ   Z15, Z0, Z0
	VPSRLQ   $32, Z0, Z2
	VPMULUDQ Z14, Z0, Z0
	VPMULUDQ Z14, Z2, Z2
	VPSLLQ   $32, Z2, Z2
	VPADDQ   Z2, Z0, Z0

	DECQ R8
	JNZ  block512

	VMOVDQU64 Z0, (AX)
	VZEROUPPER
	RET
