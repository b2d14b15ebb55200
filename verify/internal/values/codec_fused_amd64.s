//go:build amd64 && !purego

#include "textflag.h"
#include "go_asm.h"

// The codec loops of codec_fused.go: sixteen elements an iteration, in
// four groups of four; of a group, p (BF16, F16 or F32) in Y10, e (F32)
// in Y11, the step in Y12, as float64. The statistics lanes are kernels_amd64.s's:
// Y0 Σ|d|, Y1 Σd², Y2 Σp², Y3 Σe², Y4 Σp·e, Y6 the largest |d|; the step
// lanes steps_amd64.s's LEAN: Y7 Σs², Y9 the largest ratio. Y5 counts
// both the elements outside the tolerance (a quadword subtraction: the
// low doubleword) and those outside a half step (a doubleword one: both),
// so the low doublewords hold their sums and the high ones the second
// (n < 2^33). Y8 is zero. Constants are read from memory (DX laneState,
// BX stepLanes): no register is left for them.
//
// The products of widened float32 values are exact, so a fused
// multiply-add is the multiply and the add. (But for a NaN's payload: a
// NaN step makes Σs² a NaN whose payload may be another than the other
// loops give, and no chunk is done again for it; finishSteps makes a NaN
// noise the one NaN.)
//
// Of the steps, the gated loops themselves add only Σs²: an element
// outside its half step (|d| > s·(1+StepMargin)/2) or that may beat its
// lane's largest ratio (|d| > s·trig, trig its maxSkip/2) is beyond
// s·gate, the least of the two factors, and both are rare. An iteration
// with one is measured again by SLOW, which counts the elements outside
// and divides. Where many are outside, the Busy loops count them in the
// loop and measure again only those that may beat the largest ratio.
// Elements outside are counted unmasked: a chunk with a NaN or an
// infinity is counted again (fusedSteps.redo).

// GROUP measures four elements from element CX: PLOAD reads their
// published values, EO(DI) and EO(R8) their values and steps; TOL
// sets Y12 to the mask of |d| (Y13) beyond the tolerance; STEPS (GATED or
// BUSY) leaves in Y14 the mask of those to measure again.
#define GROUP(TOL, STEPS, PLOAD, EO) \
	PLOAD \
	VCVTPS2PD X10, Y10 \
	VCVTPS2PD EO(DI)(CX*4), Y11 \
	VSUBPD Y10, Y11, Y12 \
	VANDPD stepLanes_abs(BX), Y12, Y13 \
	VADDPD Y13, Y0, Y0 \
	VMULPD Y12, Y12, Y12 \
	VADDPD Y12, Y1, Y1 \
	VFMADD231PD Y10, Y10, Y2 \
	VFMADD231PD Y11, Y11, Y3 \
	VFMADD231PD Y11, Y10, Y4 \
	TOL \
	VPSUBQ Y12, Y5, Y5 \
	VMAXPD Y13, Y6, Y6 \
	VCVTPS2PD EO(R8)(CX*4), Y12 \
	VFMADD231PD Y12, Y12, Y7 \
	STEPS

// GATED is the gate (the loops named without Busy).
#define GATED \
	VMULPD stepLanes_gate(BX), Y12, Y14 \
	VCMPPD $0x1e, Y14, Y13, Y14

// BUSY counts the elements outside a half step, and is the mask of those
// that may beat their lane's largest ratio (the Busy loops, for chunks
// where many are outside: the gate would stop too many).
#define BUSY \
	VMULPD stepLanes_k2(BX), Y12, Y14 \
	VCMPPD $0x1e, Y14, Y13, Y14 \
	VPSUBD Y14, Y5, Y5 \
	VMULPD stepLanes_trig(BX), Y12, Y14 \
	VCMPPD $0x1e, Y14, Y13, Y14

// The published values of a group as float32 in X10. BF16: the words of
// four elements into the high halves of doublewords (Y8 is zero), those
// of the first or the last four of eight (PLO, PHI), or of four alone (PB:
// no byte read beyond them). F16 (PH) and F32 (PS): converted, or loaded.
#define PLO(PO) VPUNPCKLWD PO(SI)(CX*2), X8, X10
#define PHI(PO) VPUNPCKHWD PO(SI)(CX*2), X8, X10
#define PB(PO) \
	VPMOVZXWD PO(SI)(CX*2), X10 \
	VPSLLD $16, X10, X10
#define PH(PO) VCVTPH2PS PO(SI)(CX*2), X10
#define PS(PO) VMOVUPS PO(SI)(CX*4), X10

// TOLR is atol + rtol·|p|, as the kernels compute it; TOLRM the same of
// the mirrored loops' p, the decoded values (Y11).
#define TOLR TOLOF(Y10)
#define TOLRM TOLOF(Y11)
#define TOLOF(P) \
	VANDPD stepLanes_abs(BX), P, Y12 \
	VMULPD laneState_rtol(DX), Y12, Y12 \
	VADDPD laneState_atol(DX), Y12, Y12 \
	VCMPPD $0x1e, Y12, Y13, Y12

// TOLA is atol: with rtol 0 that is atol + rtol·|p| for a finite p.
#define TOLA \
	VCMPPD $0x1e, laneState_atol(DX), Y13, Y12

// SLOW measures four elements from element CX (PLOAD reads their
// published values, EO(DI) and EO(R8) their values and steps) against
// their half steps: COUNT (OUTSIDE, or nothing where the loop counted
// them) counts those outside, and their ratios are folded into Y9
// (|d|/half, 0 where |d| is 0 or the pair is not finite; a NaN, of a NaN
// step, is no ratio: VMAXPD gives its second operand when either is a
// NaN).
#define SLOW(COUNT, PLOAD, EO) \
	PLOAD \
	VCVTPS2PD X10, Y10 \
	VCVTPS2PD EO(DI)(CX*4), Y11 \
	VSUBPD Y10, Y11, Y12 \
	VANDPD stepLanes_abs(BX), Y12, Y13 \
	VCVTPS2PD EO(R8)(CX*4), Y12 \
	COUNT \
	VMULPD stepLanes_half(BX), Y12, Y12 \
	VDIVPD Y12, Y13, Y14 \
	VCMPPD $0x0, Y8, Y13, Y10 \
	VANDNPD Y14, Y10, Y14 \
	VSUBPD Y13, Y13, Y11 \
	VCMPPD $0x0, Y8, Y11, Y11 \
	VANDPD Y11, Y14, Y14 \
	VMAXPD Y9, Y14, Y9

#define OUTSIDE \
	VMULPD stepLanes_k2(BX), Y12, Y14 \
	VCMPPD $0x1e, Y14, Y13, Y14 \
	VPSUBD Y14, Y5, Y5

#define NONE

// AGAIN sets trig, the largest ratios times maxSkip/2, and the gate, the
// least of it and (1+StepMargin)/2, again; it counts the iterations
// measured again.
#define AGAIN \
	VMULPD stepLanes_skip(BX), Y9, Y14 \
	VMULPD stepLanes_half(BX), Y14, Y14 \
	VMOVUPD Y14, stepLanes_trig(BX) \
	VMINPD stepLanes_k2(BX), Y14, Y14 \
	VMOVUPD Y14, stepLanes_gate(BX) \
	INCQ stepLanes_again(BX)



// CODEC is a codec loop's body: G0 to G3 read the plain values of an
// iteration's groups, S0 to S3 those of SLOW, G the tail's; Y2 and Y3
// are the lane sums at P2 and E2 (Σp² and Σe², or the mirrored loops'
// Σe² and Σp²).
#define CODEC(TOL, STEPS, COUNT, P2, E2, G0, G1, G2, G3, G, S0, S1, S2, S3) \
	MOVQ p+0(FP), SI \
	MOVQ e+8(FP), DI \
	MOVQ s+16(FP), R8 \
	MOVQ n+24(FP), R9 \
	MOVQ st+32(FP), DX \
	MOVQ sl+40(FP), BX \
	ANDQ $-4, R9 \
	JZ done \
	MOVQ R9, R10 \
	ANDQ $-16, R10 \
	XORQ CX, CX \
	VMOVUPD laneState_sum+0(DX), Y0 \
	VMOVUPD laneState_sum+32(DX), Y1 \
	VMOVUPD laneState_sum+P2(DX), Y2 \
	VMOVUPD laneState_sum+E2(DX), Y3 \
	VMOVUPD laneState_sum+128(DX), Y4 \
	VPXOR Y5, Y5, Y5 \
	VMOVUPD laneState_max(DX), Y6 \
	VMOVUPD stepLanes_s2(BX), Y7 \
	VPXOR Y8, Y8, Y8 \
	VMOVUPD stepLanes_rmax(BX), Y9 \
	TESTQ R10, R10 \
	JZ tail \
loop: \
	GROUP(TOL, STEPS, G0, 0) \
	VMOVAPD Y14, Y15 \
	GROUP(TOL, STEPS, G1, 16) \
	VORPD Y14, Y15, Y15 \
	GROUP(TOL, STEPS, G2, 32) \
	VORPD Y14, Y15, Y15 \
	GROUP(TOL, STEPS, G3, 48) \
	VORPD Y14, Y15, Y15 \
	VPTEST Y15, Y15 \
	JNZ again \
next: \
	ADDQ $16, CX \
	CMPQ CX, R10 \
	JB loop \
tail: \
	CMPQ CX, R9 \
	JAE end \
	GROUP(TOL, STEPS, G, 0) \
	VPTEST Y14, Y14 \
	JNZ again1 \
next1: \
	ADDQ $4, CX \
	JMP tail \
end: \
	VMOVUPD Y0, laneState_sum+0(DX) \
	VMOVUPD Y1, laneState_sum+32(DX) \
	VMOVUPD Y2, laneState_sum+P2(DX) \
	VMOVUPD Y3, laneState_sum+E2(DX) \
	VMOVUPD Y4, laneState_sum+128(DX) \
	VMOVUPD Y6, laneState_max(DX) \
	VMOVUPD Y7, stepLanes_s2(BX) \
	VMOVUPD Y9, stepLanes_rmax(BX) \
	VPSRLQ $32, Y5, Y14 \
	VPSLLQ $32, Y5, Y5 \
	VPSRLQ $32, Y5, Y5 \
	VPSUBQ Y14, Y5, Y5 \
	VPADDQ laneState_out(DX), Y5, Y5 \
	VMOVDQU Y5, laneState_out(DX) \
	VPADDQ stepLanes_out(BX), Y14, Y14 \
	VMOVDQU Y14, stepLanes_out(BX) \
	VZEROUPPER \
done: \
	RET \
again: \
	SLOW(COUNT, S0, 0) \
	SLOW(COUNT, S1, 16) \
	SLOW(COUNT, S2, 32) \
	SLOW(COUNT, S3, 48) \
	AGAIN \
	JMP next \
again1: \
	SLOW(COUNT, G, 0) \
	AGAIN \
	JMP next1

// At the end Y5's high doublewords are the elements outside a half step,
// its low ones those and the elements outside the tolerance. The loops
// are named by their dtypes, Atol for a tolerance of Atol alone, Busy.


// func codecBF16F32AVX2(p, e, s *byte, n int, st *laneState, sl *stepLanes)
TEXT ·codecBF16F32AVX2(SB), NOSPLIT, $0-48
	CODEC(TOLR, GATED, OUTSIDE, 64, 96, PLO(0), PHI(0), PLO(16), PHI(16), PB(0), PB(0), PB(8), PB(16), PB(24))

// func codecBF16F32BusyAVX2(p, e, s *byte, n int, st *laneState, sl *stepLanes)
TEXT ·codecBF16F32BusyAVX2(SB), NOSPLIT, $0-48
	CODEC(TOLR, BUSY, NONE, 64, 96, PLO(0), PHI(0), PLO(16), PHI(16), PB(0), PB(0), PB(8), PB(16), PB(24))

// func codecBF16F32AtolAVX2(p, e, s *byte, n int, st *laneState, sl *stepLanes)
TEXT ·codecBF16F32AtolAVX2(SB), NOSPLIT, $0-48
	CODEC(TOLA, GATED, OUTSIDE, 64, 96, PLO(0), PHI(0), PLO(16), PHI(16), PB(0), PB(0), PB(8), PB(16), PB(24))

// func codecBF16F32AtolBusyAVX2(p, e, s *byte, n int, st *laneState, sl *stepLanes)
TEXT ·codecBF16F32AtolBusyAVX2(SB), NOSPLIT, $0-48
	CODEC(TOLA, BUSY, NONE, 64, 96, PLO(0), PHI(0), PLO(16), PHI(16), PB(0), PB(0), PB(8), PB(16), PB(24))

// func codecF16F32AVX2(p, e, s *byte, n int, st *laneState, sl *stepLanes)
TEXT ·codecF16F32AVX2(SB), NOSPLIT, $0-48
	CODEC(TOLR, GATED, OUTSIDE, 64, 96, PH(0), PH(8), PH(16), PH(24), PH(0), PH(0), PH(8), PH(16), PH(24))

// func codecF16F32BusyAVX2(p, e, s *byte, n int, st *laneState, sl *stepLanes)
TEXT ·codecF16F32BusyAVX2(SB), NOSPLIT, $0-48
	CODEC(TOLR, BUSY, NONE, 64, 96, PH(0), PH(8), PH(16), PH(24), PH(0), PH(0), PH(8), PH(16), PH(24))

// func codecF16F32AtolAVX2(p, e, s *byte, n int, st *laneState, sl *stepLanes)
TEXT ·codecF16F32AtolAVX2(SB), NOSPLIT, $0-48
	CODEC(TOLA, GATED, OUTSIDE, 64, 96, PH(0), PH(8), PH(16), PH(24), PH(0), PH(0), PH(8), PH(16), PH(24))

// func codecF16F32AtolBusyAVX2(p, e, s *byte, n int, st *laneState, sl *stepLanes)
TEXT ·codecF16F32AtolBusyAVX2(SB), NOSPLIT, $0-48
	CODEC(TOLA, BUSY, NONE, 64, 96, PH(0), PH(8), PH(16), PH(24), PH(0), PH(0), PH(8), PH(16), PH(24))

// func codecF32F32AVX2(p, e, s *byte, n int, st *laneState, sl *stepLanes)
TEXT ·codecF32F32AVX2(SB), NOSPLIT, $0-48
	CODEC(TOLR, GATED, OUTSIDE, 64, 96, PS(0), PS(16), PS(32), PS(48), PS(0), PS(0), PS(16), PS(32), PS(48))

// func codecF32F32BusyAVX2(p, e, s *byte, n int, st *laneState, sl *stepLanes)
TEXT ·codecF32F32BusyAVX2(SB), NOSPLIT, $0-48
	CODEC(TOLR, BUSY, NONE, 64, 96, PS(0), PS(16), PS(32), PS(48), PS(0), PS(0), PS(16), PS(32), PS(48))

// func codecF32F32AtolAVX2(p, e, s *byte, n int, st *laneState, sl *stepLanes)
TEXT ·codecF32F32AtolAVX2(SB), NOSPLIT, $0-48
	CODEC(TOLA, GATED, OUTSIDE, 64, 96, PS(0), PS(16), PS(32), PS(48), PS(0), PS(0), PS(16), PS(32), PS(48))

// func codecF32F32AtolBusyAVX2(p, e, s *byte, n int, st *laneState, sl *stepLanes)
TEXT ·codecF32F32AtolBusyAVX2(SB), NOSPLIT, $0-48
	CODEC(TOLA, BUSY, NONE, 64, 96, PS(0), PS(16), PS(32), PS(48), PS(0), PS(0), PS(16), PS(32), PS(48))

// The mirrored loops, for a codec on the published side: p are the plain
// exported values, e the decoded published ones and their steps. |d|, d²,
// p·e and the steps are the same either way round; Σp² and Σe² are
// exchanged, and the tolerance is of the decoded values.

// func codecF32BF16AVX2(p, e, s *byte, n int, st *laneState, sl *stepLanes)
TEXT ·codecF32BF16AVX2(SB), NOSPLIT, $0-48
	CODEC(TOLRM, GATED, OUTSIDE, 96, 64, PLO(0), PHI(0), PLO(16), PHI(16), PB(0), PB(0), PB(8), PB(16), PB(24))

// func codecF32BF16BusyAVX2(p, e, s *byte, n int, st *laneState, sl *stepLanes)
TEXT ·codecF32BF16BusyAVX2(SB), NOSPLIT, $0-48
	CODEC(TOLRM, BUSY, NONE, 96, 64, PLO(0), PHI(0), PLO(16), PHI(16), PB(0), PB(0), PB(8), PB(16), PB(24))

// func codecF32BF16AtolAVX2(p, e, s *byte, n int, st *laneState, sl *stepLanes)
TEXT ·codecF32BF16AtolAVX2(SB), NOSPLIT, $0-48
	CODEC(TOLA, GATED, OUTSIDE, 96, 64, PLO(0), PHI(0), PLO(16), PHI(16), PB(0), PB(0), PB(8), PB(16), PB(24))

// func codecF32BF16AtolBusyAVX2(p, e, s *byte, n int, st *laneState, sl *stepLanes)
TEXT ·codecF32BF16AtolBusyAVX2(SB), NOSPLIT, $0-48
	CODEC(TOLA, BUSY, NONE, 96, 64, PLO(0), PHI(0), PLO(16), PHI(16), PB(0), PB(0), PB(8), PB(16), PB(24))

// func codecF32F16AVX2(p, e, s *byte, n int, st *laneState, sl *stepLanes)
TEXT ·codecF32F16AVX2(SB), NOSPLIT, $0-48
	CODEC(TOLRM, GATED, OUTSIDE, 96, 64, PH(0), PH(8), PH(16), PH(24), PH(0), PH(0), PH(8), PH(16), PH(24))

// func codecF32F16BusyAVX2(p, e, s *byte, n int, st *laneState, sl *stepLanes)
TEXT ·codecF32F16BusyAVX2(SB), NOSPLIT, $0-48
	CODEC(TOLRM, BUSY, NONE, 96, 64, PH(0), PH(8), PH(16), PH(24), PH(0), PH(0), PH(8), PH(16), PH(24))

// func codecF32F16AtolAVX2(p, e, s *byte, n int, st *laneState, sl *stepLanes)
TEXT ·codecF32F16AtolAVX2(SB), NOSPLIT, $0-48
	CODEC(TOLA, GATED, OUTSIDE, 96, 64, PH(0), PH(8), PH(16), PH(24), PH(0), PH(0), PH(8), PH(16), PH(24))

// func codecF32F16AtolBusyAVX2(p, e, s *byte, n int, st *laneState, sl *stepLanes)
TEXT ·codecF32F16AtolBusyAVX2(SB), NOSPLIT, $0-48
	CODEC(TOLA, BUSY, NONE, 96, 64, PH(0), PH(8), PH(16), PH(24), PH(0), PH(0), PH(8), PH(16), PH(24))
