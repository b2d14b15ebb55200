package ggufwrite

import (
	"encoding/binary"
	"math"

	"github.com/x448/float16"
)

// The reference quantizers llama-quantize runs without an importance
// matrix, ported from ggml's quantize_row_q8_0_ref and quantize_row_q4_K_ref
// (with make_qkx2_quants and nearest_int), ggml/src/ggml-quants.c at
// ggml-org/llama.cpp 01243c587feceaa5d6a6c2305535ef2f549c48b8. Each appends
// the blocks of x (a whole number of blocks) to dst, so a writer can
// quantize a row at a time. Products are converted to float32 where ggml
// rounds them, so that no platform fuses a multiply-add.

// Block sizes of the two types, in values and bytes.
const (
	Q8_0Values, Q8_0Bytes = 32, 34
	Q4KValues, Q4KBytes   = 256, 144
)

// f16 is GGML_FP32_TO_FP16: round to nearest even.
func f16(v float32) uint16 { return float16.Fromfloat32(v).Bits() }

// f16To32 is GGML_FP16_TO_FP32.
func f16To32(h uint16) float32 { return float16.Frombits(h).Float32() }

func abs32(v float32) float32 { return math.Float32frombits(math.Float32bits(v) &^ (1 << 31)) }

// AppendQ8_0 is quantize_row_q8_0_ref: d = amax/127, q = roundf(x/d).
func AppendQ8_0(dst []byte, x []float32) []byte {
	for len(x) >= Q8_0Values {
		b := x[:Q8_0Values]
		var amax float32
		for _, v := range b {
			amax = max(amax, abs32(v))
		}
		d := amax / 127
		id := float32(0)
		if d != 0 {
			id = 1 / d
		}
		dst = binary.LittleEndian.AppendUint16(dst, f16(d))
		for _, v := range b {
			dst = append(dst, byte(int8(math.Round(float64(float32(v*id))))))
		}
		x = x[Q8_0Values:]
	}
	return dst
}

// nearestInt is ggml's nearest_int: round half to even through the
// float32 adder (|v| ≤ 4194303).
func nearestInt(v float32) int {
	f := v + 12582912
	return int(math.Float32bits(f)&0x007fffff) - 0x00400000
}

// AppendQ4K is quantize_row_q4_K_ref: per sub-block of 32 a scale and min
// fitted by make_qkx2_quants, both quantized to 6 bits against the block's
// largest, then every value rounded to the final grid.
func AppendQ4K(dst []byte, x []float32) []byte {
	var (
		laux         [32]uint8
		all          [Q4KValues]uint8
		weights      [32]float32
		scales, mins [8]float32
		packed       [12]uint8
	)
	for len(x) >= Q4KValues {
		var maxScale, maxMin float32
		for j := range 8 {
			sub := x[32*j : 32*j+32]
			var sumX2 float32
			for _, v := range sub {
				sumX2 += float32(v * v)
			}
			avX := float32(math.Sqrt(float64(sumX2 / 32)))
			for i, v := range sub {
				weights[i] = avX + abs32(v)
			}
			scales[j] = makeQKX2Quants(sub, weights[:], all[32*j:32*j+32], &mins[j], laux[:], -1, 0.1, 20)
			maxScale, maxMin = max(maxScale, scales[j]), max(maxMin, mins[j])
		}
		invScale, invMin := float32(0), float32(0)
		if maxScale > 0 {
			invScale = 63 / maxScale
		}
		if maxMin > 0 {
			invMin = 63 / maxMin
		}
		packed = [12]uint8{}
		for j := range 8 {
			ls := min(63, uint8(nearestInt(float32(invScale*scales[j]))))
			lm := min(63, uint8(nearestInt(float32(invMin*mins[j]))))
			if j < 4 {
				packed[j], packed[j+4] = ls, lm
			} else {
				packed[j+4] = ls&0xF | (lm&0xF)<<4
				packed[j-4] |= (ls >> 4) << 6
				packed[j] |= (lm >> 4) << 6
			}
		}
		hd, hmin := f16(maxScale/63), f16(maxMin/63)
		d, dmin := f16To32(hd), f16To32(hmin)
		for j := range 8 {
			sc, m := scaleMin(j, packed[:])
			dj := float32(d * float32(sc))
			if dj == 0 {
				// ggml leaves L as make_qkx2_quants set it.
				continue
			}
			dm := float32(dmin * float32(m))
			for i, v := range x[32*j : 32*j+32] {
				all[32*j+i] = uint8(max(0, min(15, nearestInt(float32(v+dm)/dj))))
			}
		}
		dst = binary.LittleEndian.AppendUint16(dst, hd)
		dst = binary.LittleEndian.AppendUint16(dst, hmin)
		dst = append(dst, packed[:]...)
		for j := 0; j < Q4KValues; j += 64 {
			for i := range 32 {
				dst = append(dst, all[j+i]|all[j+i+32]<<4)
			}
		}
		x = x[Q4KValues:]
	}
	return dst
}

// scaleMin is get_scale_min_k4.
func scaleMin(j int, q []uint8) (sc, m uint8) {
	if j < 4 {
		return q[j] & 63, q[j+4] & 63
	}
	return q[j+4]&0xF | (q[j-4]>>6)<<4, q[j+4]>>4 | (q[j]>>6)<<4
}

// makeQKX2Quants is make_qkx2_quants with use_mad false (nmax 15): the
// grid from the sub-block's min and max, then nstep+1 widened grids refitted
// by weighted least squares, keeping the one of least weighted squared
// error. It sets L and the negated min, and returns the scale.
func makeQKX2Quants(x, w []float32, L []uint8, theMin *float32, laux []uint8, rmin, rdelta float32, nstep int) float32 {
	const nmax = 15
	lo, hi := x[0], x[0]
	sumW := w[0]
	sumX := float32(sumW * x[0])
	for i := 1; i < len(x); i++ {
		lo, hi = min(lo, x[i]), max(hi, x[i])
		sumW += w[i]
		sumX += float32(w[i] * x[i])
	}
	lo = min(lo, 0)
	if hi == lo {
		for i := range L {
			L[i] = 0
		}
		*theMin = -lo
		return 0
	}
	iscale := nmax / (hi - lo)
	scale := 1 / iscale
	var bestError float32
	for i, v := range x {
		L[i] = uint8(max(0, min(nmax, nearestInt(float32(iscale*(v-lo))))))
		diff := float32(scale*float32(L[i])) + lo - v
		bestError += float32(w[i] * float32(diff*diff))
	}
	for is := 0; is <= nstep; is++ {
		iscale = (rmin + float32(rdelta*float32(is)) + nmax) / (hi - lo)
		var sumL, sumL2, sumXL float32
		for i, v := range x {
			l := max(0, min(nmax, nearestInt(float32(iscale*(v-lo)))))
			laux[i] = uint8(l)
			fl := float32(l)
			sumL += float32(w[i] * fl)
			sumL2 += float32(float32(w[i]*fl) * fl)
			sumXL += float32(float32(w[i]*fl) * v)
		}
		D := float32(sumW*sumL2) - float32(sumL*sumL)
		if D <= 0 {
			continue
		}
		thisScale := (float32(sumW*sumXL) - float32(sumX*sumL)) / D
		thisMin := (float32(sumL2*sumX) - float32(sumL*sumXL)) / D
		if thisMin > 0 {
			thisMin = 0
			thisScale = sumXL / sumL2
		}
		var curError float32
		for i, v := range x {
			diff := float32(thisScale*float32(laux[i])) + thisMin - v
			curError += float32(w[i] * float32(diff*diff))
		}
		if curError < bestError {
			copy(L, laux[:len(x)])
			bestError, scale, lo = curError, thisScale, thisMin
		}
	}
	*theMin = -lo
	return scale
}
