package xxh3

import (
	"encoding/binary"
	"math/bits"
)

// The reference's primes (XXH_PRIME32_*, XXH_PRIME64_*, PRIME_MX*).
const (
	prime32_1 = 0x9E3779B1
	prime32_2 = 0x85EBCA77
	prime32_3 = 0xC2B2AE3D

	prime64_1 = 0x9E3779B185EBCA87
	prime64_2 = 0xC2B2AE3D27D4EB4F
	prime64_3 = 0x165667B19E3779F9
	prime64_4 = 0x85EBCA77C2B2AE63
	prime64_5 = 0x27D4EB2F165667C5

	primeMx1 = 0x165667919E3779F9
	primeMx2 = 0x9FB21C651E98DF25
)

// The geometry of the long path with the default secret.
const (
	stripeLen      = 64                           // XXH_STRIPE_LEN
	secretSize     = len(kSecret)                 // XXH_SECRET_DEFAULT_SIZE
	stripesPerBlk  = (secretSize - stripeLen) / 8 // 16: the secret advances 8 bytes a stripe
	blockLen       = stripeLen * stripesPerBlk    // 1024
	scrambleOffset = secretSize - stripeLen       // 128: the secret of the scramble
	lastStripeOff  = secretSize - stripeLen - 7   // XXH_SECRET_LASTACC_START
	mergeOffset    = 11                           // XXH_SECRET_MERGEACCS_START
	midSizeMax     = 240                          // XXH3_MIDSIZE_MAX
	secretSizeMin  = 136                          // XXH3_SECRET_SIZE_MIN
	bufferSize     = 256                          // XXH3_INTERNALBUFFER_SIZE
	bufferStripes  = bufferSize / stripeLen       // 4
	midLastOffset  = secretSizeMin - 17           // XXH3_MIDSIZE_LASTOFFSET
	midStartOffset = 3                            // XXH3_MIDSIZE_STARTOFFSET
)

// kSecret is the reference's default secret, XXH3_kSecret.
var kSecret = [192]byte{
	0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c, 0xf7, 0x21, 0xad, 0x1c,
	0xde, 0xd4, 0x6d, 0xe9, 0x83, 0x90, 0x97, 0xdb, 0x72, 0x40, 0xa4, 0xa4, 0xb7, 0xb3, 0x67, 0x1f,
	0xcb, 0x79, 0xe6, 0x4e, 0xcc, 0xc0, 0xe5, 0x78, 0x82, 0x5a, 0xd0, 0x7d, 0xcc, 0xff, 0x72, 0x21,
	0xb8, 0x08, 0x46, 0x74, 0xf7, 0x43, 0x24, 0x8e, 0xe0, 0x35, 0x90, 0xe6, 0x81, 0x3a, 0x26, 0x4c,
	0x3c, 0x28, 0x52, 0xbb, 0x91, 0xc3, 0x00, 0xcb, 0x88, 0xd0, 0x65, 0x8b, 0x1b, 0x53, 0x2e, 0xa3,
	0x71, 0x64, 0x48, 0x97, 0xa2, 0x0d, 0xf9, 0x4e, 0x38, 0x19, 0xef, 0x46, 0xa9, 0xde, 0xac, 0xd8,
	0xa8, 0xfa, 0x76, 0x3f, 0xe3, 0x9c, 0x34, 0x3f, 0xf9, 0xdc, 0xbb, 0xc7, 0xc7, 0x0b, 0x4f, 0x1d,
	0x8a, 0x51, 0xe0, 0x4b, 0xcd, 0xb4, 0x59, 0x31, 0xc8, 0x9f, 0x7e, 0xc9, 0xd9, 0x78, 0x73, 0x64,
	0xea, 0xc5, 0xac, 0x83, 0x34, 0xd3, 0xeb, 0xc3, 0xc5, 0x81, 0xa0, 0xff, 0xfa, 0x13, 0x63, 0xeb,
	0x17, 0x0d, 0xdd, 0x51, 0xb7, 0xf0, 0xda, 0x49, 0xd3, 0x16, 0x55, 0x26, 0x29, 0xd4, 0x68, 0x9e,
	0x2b, 0x16, 0xbe, 0x58, 0x7d, 0x47, 0xa1, 0xfc, 0x8f, 0xf8, 0xb8, 0xd1, 0x7a, 0xd0, 0x31, 0xce,
	0x45, 0xcb, 0x3a, 0x8f, 0x95, 0x16, 0x04, 0x28, 0xaf, 0xd7, 0xfb, 0xca, 0xbb, 0x4b, 0x40, 0x7e,
}

// initAcc is XXH3_INIT_ACC, the accumulators before the first stripe.
var initAcc = [8]uint64{prime32_3, prime64_1, prime64_2, prime64_3, prime64_4, prime32_2, prime64_5, prime32_1}

// Hash is the XXH3-64 (seed 0) of b: XXH3_64bits.
func Hash(b []byte) uint64 {
	switch n := len(b); {
	case n <= 16:
		return hash0to16(b)
	case n <= 128:
		return hash17to128(b)
	case n <= midSizeMax:
		return hash129to240(b)
	default:
		return hashLong(b)
	}
}

func le64(b []byte) uint64 { return binary.LittleEndian.Uint64(b) }
func le32(b []byte) uint32 { return binary.LittleEndian.Uint32(b) }

// secret64 is the little-endian word of the default secret at off.
func secret64(off int) uint64 { return le64(kSecret[off:]) }

// mulFold64 is XXH3_mul128_fold64: the 128-bit product's halves xored.
func mulFold64(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}

// avalanche64 is XXH64_avalanche.
func avalanche64(h uint64) uint64 {
	h ^= h >> 33
	h *= prime64_2
	h ^= h >> 29
	h *= prime64_3
	return h ^ h>>32
}

// avalanche is XXH3_avalanche.
func avalanche(h uint64) uint64 {
	h ^= h >> 37
	h *= primeMx1
	return h ^ h>>32
}

// rrmxmx is XXH3_rrmxmx, the mix of 4- to 8-byte inputs.
func rrmxmx(h, n uint64) uint64 {
	h ^= bits.RotateLeft64(h, 49) ^ bits.RotateLeft64(h, 24)
	h *= primeMx2
	h ^= (h >> 35) + n
	h *= primeMx2
	return h ^ h>>28
}

// hash0to16 is XXH3_len_0to16_64b with seed 0.
func hash0to16(b []byte) uint64 {
	n := len(b)
	switch {
	case n > 8:
		lo := le64(b) ^ (secret64(24) ^ secret64(32))
		hi := le64(b[n-8:]) ^ (secret64(40) ^ secret64(48))
		return avalanche(uint64(n) + bits.ReverseBytes64(lo) + hi + mulFold64(lo, hi))
	case n >= 4:
		in := uint64(le32(b[n-4:])) + uint64(le32(b))<<32
		return rrmxmx(in^(secret64(8)^secret64(16)), uint64(n))
	case n > 0:
		combined := uint32(b[0])<<16 | uint32(b[n>>1])<<24 | uint32(b[n-1]) | uint32(n)<<8
		return avalanche64(uint64(combined) ^ uint64(le32(kSecret[0:])^le32(kSecret[4:])))
	default:
		return avalanche64(secret64(56) ^ secret64(64))
	}
}

// mix16 is XXH3_mix16B with seed 0: 16 bytes of input against 16 of the
// secret at off.
func mix16(in []byte, off int) uint64 {
	return mulFold64(le64(in)^secret64(off), le64(in[8:])^secret64(off+8))
}

// hash17to128 is XXH3_len_17to128_64b with seed 0: pairs of 16 bytes
// from both ends towards the middle.
func hash17to128(b []byte) uint64 {
	n := len(b)
	acc := uint64(n) * prime64_1
	if n > 32 {
		if n > 64 {
			if n > 96 {
				acc += mix16(b[48:], 96)
				acc += mix16(b[n-64:], 112)
			}
			acc += mix16(b[32:], 64)
			acc += mix16(b[n-48:], 80)
		}
		acc += mix16(b[16:], 32)
		acc += mix16(b[n-32:], 48)
	}
	acc += mix16(b, 0)
	acc += mix16(b[n-16:], 16)
	return avalanche(acc)
}

// hash129to240 is XXH3_len_129to240_64b with seed 0.
func hash129to240(b []byte) uint64 {
	n := len(b)
	acc := uint64(n) * prime64_1
	for i := range 8 {
		acc += mix16(b[16*i:], 16*i)
	}
	accEnd := mix16(b[n-16:], midLastOffset)
	acc = avalanche(acc)
	for i := 8; i < n/16; i++ {
		accEnd += mix16(b[16*i:], 16*(i-8)+midStartOffset)
	}
	return avalanche(acc + accEnd)
}

// hashLong is XXH3_hashLong_64b with the default secret: whole blocks,
// the stripes of the last partial block, and the input's last 64 bytes
// as a stripe of their own (overlapping what came before).
func hashLong(b []byte) uint64 {
	acc := initAcc
	n := len(b)
	blocks := (n - 1) / blockLen
	accumulateBlocks(&acc, b[:blocks*blockLen])
	rest := b[blocks*blockLen:]
	accumulate(&acc, rest, kSecret[:], (len(rest)-1)/stripeLen)
	accumulate(&acc, b[n-stripeLen:], kSecret[lastStripeOff:], 1)
	return mergeAccs(&acc, uint64(n)*prime64_1)
}

// mergeAccs is XXH3_mergeAccs with the default secret.
func mergeAccs(acc *[8]uint64, start uint64) uint64 {
	h := start
	for i := 0; i < 8; i += 2 {
		h += mulFold64(acc[i]^secret64(mergeOffset+8*i), acc[i+1]^secret64(mergeOffset+8*i+8))
	}
	return avalanche(h)
}
