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
