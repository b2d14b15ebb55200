package xxh3

import "hash"

// A Hasher computes the XXH3-64 (seed 0) of what is written to it, the
// same as Hash of all of it at once, however it is split: the
// reference's XXH3_state_t with the default secret. The zero value is
// ready to use. It implements hash.Hash64.
type Hasher struct {
	acc     [8]uint64
	total   uint64 // bytes written since Reset
	soFar   int    // stripes of the current block accumulated
	nbuf    int    // bytes in buf
	buf     [bufferSize]byte
	started bool // acc holds initAcc or later (New or Reset ran)
}

var _ hash.Hash64 = (*Hasher)(nil)

// New returns a Hasher with nothing written.
func New() *Hasher {
	h := new(Hasher)
	h.Reset()
	return h
}

// Reset forgets what was written.
func (h *Hasher) Reset() {
	h.acc = initAcc
	h.total, h.soFar, h.nbuf = 0, 0, 0
	h.started = true
}

// Size is 8, the bytes of Sum's digest.
func (h *Hasher) Size() int { return 8 }

// BlockSize is the stripe, the unit the long path consumes.
func (h *Hasher) BlockSize() int { return stripeLen }

// Write adds p; it never fails.
func (h *Hasher) Write(p []byte) (int, error) {
	if !h.started {
		h.Reset()
	}
	n := len(p)
	h.total += uint64(n)
	// The buffer is consumed only when more input follows it, so that
	// the last bytes are always there for Sum64.
	if n <= bufferSize-h.nbuf {
		h.nbuf += copy(h.buf[h.nbuf:], p)
		return n, nil
	}
	if h.nbuf > 0 {
		k := copy(h.buf[h.nbuf:], p)
		p = p[k:]
		consumeStripes(&h.acc, &h.soFar, h.buf[:], bufferStripes)
		h.nbuf = 0
	}
	if len(p) > bufferSize {
		stripes := (len(p) - 1) / stripeLen
		consumeStripes(&h.acc, &h.soFar, p, stripes)
		end := stripes * stripeLen
		// Sum64's last stripe may reach back into these bytes.
		copy(h.buf[bufferSize-stripeLen:], p[end-stripeLen:end])
		p = p[end:]
	}
	h.nbuf = copy(h.buf[:], p)
	return n, nil
}

// WriteString adds s.
func (h *Hasher) WriteString(s string) (int, error) { return h.Write([]byte(s)) }

// Sum64 is the XXH3-64 of what was written; it does not change h.
func (h *Hasher) Sum64() uint64 {
	if !h.started {
		return Hash(nil)
	}
	if h.total <= midSizeMax {
		return Hash(h.buf[:h.total])
	}
	acc, soFar := h.acc, h.soFar
	var last []byte
	if h.nbuf >= stripeLen {
		consumeStripes(&acc, &soFar, h.buf[:], (h.nbuf-1)/stripeLen)
		last = h.buf[h.nbuf-stripeLen : h.nbuf]
	} else {
		// The last stripe is the tail of the previous bytes, kept at the
		// end of buf, then the nbuf buffered ones.
		var stripe [stripeLen]byte
		catchUp := stripeLen - h.nbuf
		copy(stripe[:], h.buf[bufferSize-catchUp:])
		copy(stripe[catchUp:], h.buf[:h.nbuf])
		last = stripe[:]
	}
	accumulate(&acc, last, kSecret[lastStripeOff:], 1)
	return mergeAccs(&acc, h.total*prime64_1)
}

// Sum appends the big-endian bytes of Sum64 to b.
func (h *Hasher) Sum(b []byte) []byte {
	v := h.Sum64()
	return append(b, byte(v>>56), byte(v>>48), byte(v>>40), byte(v>>32), byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
}

// consumeStripes is XXH3_consumeStripes: stripes stripes of data into
// acc, scrambling at each end of a block; soFar is the stripes of the
// current block before and after.
func consumeStripes(acc *[8]uint64, soFar *int, data []byte, stripes int) {
	if left := stripesPerBlk - *soFar; stripes >= left {
		accumulate(acc, data, kSecret[8**soFar:], left)
		scrambleScalar(acc)
		data, stripes = data[left*stripeLen:], stripes-left
		blocks := stripes / stripesPerBlk
		accumulateBlocks(acc, data[:blocks*blockLen])
		data, stripes = data[blocks*blockLen:], stripes-blocks*stripesPerBlk
		*soFar = 0
	}
	if stripes > 0 {
		accumulate(acc, data, kSecret[8**soFar:], stripes)
		*soFar += stripes
	}
}
