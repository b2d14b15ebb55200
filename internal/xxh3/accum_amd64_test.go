package xxh3

import (
	"math/rand/v2"
	"testing"
)

// withScalar runs f with the AVX2 paths switched off.
func withScalar(f func()) {
	hasAVX2() // settle the state before overriding it
	saved := avx2State.Load()
	avx2State.Store(avx2No)
	defer avx2State.Store(saved)
	f()
}

func TestHashReferenceScalar(t *testing.T) {
	withScalar(func() { TestHashReference(t) })
}

func TestHasherReferenceScalar(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	withScalar(func() { TestHasherReference(t) })
}

// TestAVX2MatchesScalar compares the assembly with the portable loop on
// random accumulators, inputs and secret offsets.
func TestAVX2MatchesScalar(t *testing.T) {
	if !hasAVX2() {
		t.Skip("no AVX2 on this CPU")
	}
	rng := rand.New(rand.NewPCG(21, 3))
	data := make([]byte, 5*blockLen)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	randomAcc := func() [8]uint64 {
		var a [8]uint64
		for i := range a {
			a[i] = rng.Uint64()
		}
		return a
	}
	for stripes := 1; stripes <= stripesPerBlk; stripes++ {
		for _, off := range []int{0, 8 * (stripesPerBlk - stripes), lastStripeOff} {
			if off+8*(stripes-1)+stripeLen > secretSize {
				continue
			}
			start := randomAcc()
			want, got := start, start
			accumulateScalar(&want, data[off:], kSecret[off:], stripes)
			accumulateAVX2(&got, &data[off], &kSecret[off], stripes)
			if got != want {
				t.Errorf("%d stripes, secret at %d: AVX2 %x, scalar %x", stripes, off, got, want)
			}
		}
	}
	for blocks := 1; blocks <= 5; blocks++ {
		start := randomAcc()
		want, got := start, start
		accumulateBlocksScalar(&want, data[:blocks*blockLen])
		accumulateBlocksAVX2(&got, &data[0], &kSecret, blocks)
		if got != want {
			t.Errorf("%d blocks: AVX2 %x, scalar %x", blocks, got, want)
		}
	}
}
