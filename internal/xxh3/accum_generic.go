package xxh3

// accumulateScalar is XXH3_accumulate_scalar: stripes 64-byte stripes of
// data into acc, the secret advancing 8 bytes a stripe from secret[0].
// Each lane adds its neighbour's input and the product of the 32-bit
// halves of its own input xor the secret; the lanes are spelt out so
// that the accumulators stay in registers and the loads need no checks.
func accumulateScalar(acc *[8]uint64, data, secret []byte, stripes int) {
	a0, a1, a2, a3, a4, a5, a6, a7 := acc[0], acc[1], acc[2], acc[3], acc[4], acc[5], acc[6], acc[7]
	for s := range stripes {
		in := data[s*stripeLen:][:stripeLen]
		key := secret[8*s:][:stripeLen]
		v0, v1, v2, v3 := le64(in[0:]), le64(in[8:]), le64(in[16:]), le64(in[24:])
		v4, v5, v6, v7 := le64(in[32:]), le64(in[40:]), le64(in[48:]), le64(in[56:])
		k0, k1, k2, k3 := v0^le64(key[0:]), v1^le64(key[8:]), v2^le64(key[16:]), v3^le64(key[24:])
		k4, k5, k6, k7 := v4^le64(key[32:]), v5^le64(key[40:]), v6^le64(key[48:]), v7^le64(key[56:])
		a0 += v1 + (k0&0xFFFFFFFF)*(k0>>32)
		a1 += v0 + (k1&0xFFFFFFFF)*(k1>>32)
		a2 += v3 + (k2&0xFFFFFFFF)*(k2>>32)
		a3 += v2 + (k3&0xFFFFFFFF)*(k3>>32)
		a4 += v5 + (k4&0xFFFFFFFF)*(k4>>32)
		a5 += v4 + (k5&0xFFFFFFFF)*(k5>>32)
		a6 += v7 + (k6&0xFFFFFFFF)*(k6>>32)
		a7 += v6 + (k7&0xFFFFFFFF)*(k7>>32)
	}
	*acc = [8]uint64{a0, a1, a2, a3, a4, a5, a6, a7}
}

// scrambleScalar is XXH3_scrambleAcc_scalar with the default secret.
func scrambleScalar(acc *[8]uint64) {
	key := kSecret[scrambleOffset:]
	for i := range acc {
		a := acc[i]
		a ^= a >> 47
		a ^= le64(key[8*i:])
		acc[i] = a * prime32_1
	}
}

// accumulateBlocksScalar accumulates the whole blocks of data (len(data)
// a multiple of blockLen), scrambling after each.
func accumulateBlocksScalar(acc *[8]uint64, data []byte) {
	for ; len(data) >= blockLen; data = data[blockLen:] {
		accumulateScalar(acc, data, kSecret[:], stripesPerBlk)
		scrambleScalar(acc)
	}
}
