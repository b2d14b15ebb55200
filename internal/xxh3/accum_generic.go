package xxh3

// accumulateScalar is XXH3_accumulate_scalar: stripes 64-byte stripes of
// data into acc, the secret advancing 8 bytes a stripe from secret[0].
func accumulateScalar(acc *[8]uint64, data, secret []byte, stripes int) {
	for s := range stripes {
		in := data[s*stripeLen : s*stripeLen+stripeLen]
		key := secret[8*s : 8*s+stripeLen]
		for i := 0; i < 8; i += 2 {
			v0, v1 := le64(in[8*i:]), le64(in[8*i+8:])
			k0, k1 := v0^le64(key[8*i:]), v1^le64(key[8*i+8:])
			// Each lane adds its neighbour's input and the product of
			// its own keyed input's halves.
			acc[i] += v1 + (k0&0xFFFFFFFF)*(k0>>32)
			acc[i+1] += v0 + (k1&0xFFFFFFFF)*(k1>>32)
		}
	}
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
