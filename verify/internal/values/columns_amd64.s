//go:build !purego

#include "textflag.h"

// addColumns's loop: four columns an iteration, p in Y0, e in Y1. The
// products of a pair that is not finite are masked to +0, which leaves
// a sum as it is (no sum is −0: they start at +0, and Σp², Σe² add no
// negative products; a sum that comes back to zero is +0). The products
// of widened float32 values are exact, and each column adds one of each:
// the sums are those of the Go loop.

// func addColumnsAVX2(pp, ee, pe, pv, ev *float64, n int)
TEXT ·addColumnsAVX2(SB), NOSPLIT, $0-48
	MOVQ pp+0(FP), AX
	MOVQ ee+8(FP), BX
	MOVQ pe+16(FP), CX
	MOVQ pv+24(FP), SI
	MOVQ ev+32(FP), DI
	MOVQ n+40(FP), DX
	SHRQ $2, DX
	JZ done
	VXORPD Y15, Y15, Y15
loop:
	VMOVUPD (SI), Y0
	VMOVUPD (DI), Y1
	// Finite pairs: (p − p) | (e − e) is +0, else a NaN.
	VSUBPD Y0, Y0, Y2
	VSUBPD Y1, Y1, Y3
	VORPD Y3, Y2, Y2
	VCMPPD $0x0, Y15, Y2, Y2
	VMULPD Y0, Y0, Y4
	VANDPD Y2, Y4, Y4
	VADDPD (AX), Y4, Y4
	VMOVUPD Y4, (AX)
	VMULPD Y1, Y1, Y5
	VANDPD Y2, Y5, Y5
	VADDPD (BX), Y5, Y5
	VMOVUPD Y5, (BX)
	VMULPD Y1, Y0, Y6
	VANDPD Y2, Y6, Y6
	VADDPD (CX), Y6, Y6
	VMOVUPD Y6, (CX)
	ADDQ $32, AX
	ADDQ $32, BX
	ADDQ $32, CX
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ DX
	JNZ loop
	VZEROUPPER
done:
	RET

// The row sums' loop: four rows at a time (a lane each), their columns in
// order. An iteration reads four columns of each row and transposes them
// (TRANSPOSE), then adds the columns in turn (ROWSTEP): each row's sums
// are chains of additions in its elements' order, as in the Go loop,
// with its roundings (a·w, then the products, then the sum; no fused
// multiply-add). Pairs not finite add +0, as in addColumnsAVX2.

// TRANSPOSE turns rows A, B, C, D (four columns each) into columns: the
// first in C, the second in A, the third in D, the fourth in B (Y12 and
// Y13 are clobbered).
#define TRANSPOSE(A, B, C, D) \
	VUNPCKLPD B, A, Y12 \
	VUNPCKHPD B, A, Y13 \
	VUNPCKLPD D, C, A \
	VUNPCKHPD D, C, B \
	VPERM2F128 $0x20, A, Y12, C \
	VPERM2F128 $0x31, A, Y12, D \
	VPERM2F128 $0x20, B, Y13, A \
	VPERM2F128 $0x31, B, Y13, B

// ROWSTEP adds a column of the four rows, p in P (weighted in place by
// the column's weight at WO(R8)) and e in E, to the sums Y0 Σ(w·p)²,
// Y1 Σe², Y2 Σw·p·e.
#define ROWSTEP(P, E, WO) \
	VSUBPD P, P, Y12 \
	VSUBPD E, E, Y13 \
	VORPD Y13, Y12, Y12 \
	VCMPPD $0x0, Y15, Y12, Y12 \
	VBROADCASTSD WO(R8), Y13 \
	VMULPD Y13, P, P \
	VMULPD P, P, Y13 \
	VANDPD Y12, Y13, Y13 \
	VADDPD Y13, Y0, Y0 \
	VMULPD E, E, Y13 \
	VANDPD Y12, Y13, Y13 \
	VADDPD Y13, Y1, Y1 \
	VMULPD E, P, Y13 \
	VANDPD Y12, Y13, Y13 \
	VADDPD Y13, Y2, Y2

// func addRowsAVX2(pp, ee, pe, pv, ev, w *float64, cols, n int)
TEXT ·addRowsAVX2(SB), NOSPLIT, $0-64
	MOVQ pp+0(FP), AX
	MOVQ ee+8(FP), BX
	MOVQ pe+16(FP), CX
	MOVQ pv+24(FP), SI
	MOVQ ev+32(FP), DI
	MOVQ w+40(FP), R8
	MOVQ cols+48(FP), R9
	MOVQ n+56(FP), DX
	SHLQ $3, R9
	LEAQ (R9)(R9*2), R10
	SHRQ $2, DX
	JZ rdone
	VMOVUPD (AX), Y0
	VMOVUPD (BX), Y1
	VMOVUPD (CX), Y2
	VXORPD Y15, Y15, Y15
rloop:
	VMOVUPD (SI), Y4
	VMOVUPD (SI)(R9*1), Y5
	VMOVUPD (SI)(R9*2), Y6
	VMOVUPD (SI)(R10*1), Y7
	TRANSPOSE(Y4, Y5, Y6, Y7)
	VMOVUPD (DI), Y8
	VMOVUPD (DI)(R9*1), Y9
	VMOVUPD (DI)(R9*2), Y10
	VMOVUPD (DI)(R10*1), Y11
	TRANSPOSE(Y8, Y9, Y10, Y11)
	ROWSTEP(Y6, Y10, 0)
	ROWSTEP(Y4, Y8, 8)
	ROWSTEP(Y7, Y11, 16)
	ROWSTEP(Y5, Y9, 24)
	ADDQ $32, SI
	ADDQ $32, DI
	ADDQ $32, R8
	DECQ DX
	JNZ rloop
	VMOVUPD Y0, (AX)
	VMOVUPD Y1, (BX)
	VMOVUPD Y2, (CX)
	VZEROUPPER
rdone:
	RET
