package xxh3

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// withKernel runs f with kernel k, if the CPU has it.
func withKernel(t *testing.T, k int32, f func(t *testing.T)) {
	best := chosenKernel()
	if k > best {
		t.Skipf("kernel %d: the CPU has only %d", k, best)
	}
	kernel.Store(k)
	defer kernel.Store(best)
	f(t)
}

var kernels = []struct {
	name string
	k    int32
}{{"scalar", scalar}, {"avx2", useAVX2}, {"avx512", useAVX512}}

// TestKernelsReference runs the reference vectors through every kernel
// the CPU has (the best one is what the other tests use), the streamed
// ones up to a few blocks.
func TestKernelsReference(t *testing.T) {
	for _, k := range kernels {
		t.Run(k.name, func(t *testing.T) {
			withKernel(t, k.k, func(t *testing.T) {
				TestHashReference(t)
				checkHasher(t, 20000)
			})
		})
	}
}

// TestVectorMatchesScalar compares the assembly with the portable loop on
// random accumulators, inputs and secret offsets.
func TestVectorMatchesScalar(t *testing.T) {
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
	for _, impl := range []struct {
		k       int32
		name    string
		stripes func(acc *[8]uint64, data, secret *byte, stripes int)
		blocks  func(acc *[8]uint64, data *byte, secret *[192]byte, blocks int)
	}{
		{useAVX2, "avx2", accumulateAVX2, accumulateBlocksAVX2},
		{useAVX512, "avx512", accumulateAVX512, accumulateBlocksAVX512},
	} {
		t.Run(impl.name, func(t *testing.T) {
			if impl.k > chosenKernel() {
				t.Skipf("no %s on this CPU", impl.name)
			}
			for stripes := 1; stripes <= stripesPerBlk; stripes++ {
				for _, off := range []int{0, 8 * (stripesPerBlk - stripes), lastStripeOff} {
					if off+8*(stripes-1)+stripeLen > secretSize {
						continue
					}
					start := randomAcc()
					want, got := start, start
					accumulateScalar(&want, data[off:], kSecret[off:], stripes)
					impl.stripes(&got, &data[off], &kSecret[off], stripes)
					if got != want {
						t.Errorf("%d stripes, secret at %d: %x, scalar %x", stripes, off, got, want)
					}
				}
			}
			for blocks := 1; blocks <= 5; blocks++ {
				start := randomAcc()
				want, got := start, start
				accumulateBlocksScalar(&want, data[:blocks*blockLen])
				impl.blocks(&got, &data[0], &kSecret, blocks)
				if got != want {
					t.Errorf("%d blocks: %x, scalar %x", blocks, got, want)
				}
			}
		})
	}
}

// BenchmarkKernels is Hash of 1 MiB with each kernel the CPU has.
func BenchmarkKernels(b *testing.B) {
	input := pattern(1 << 20)
	for _, k := range kernels {
		b.Run(fmt.Sprint(k.name), func(b *testing.B) {
			best := chosenKernel()
			if k.k > best {
				b.Skip("not on this CPU")
			}
			kernel.Store(k.k)
			defer kernel.Store(best)
			b.SetBytes(int64(len(input)))
			for b.Loop() {
				Hash(input)
			}
		})
	}
}

// FuzzVectorMatchesScalar holds the assembly against the portable loop on
// the fuzzer's input: its stripes, then its whole blocks.
func FuzzVectorMatchesScalar(f *testing.F) {
	f.Add(pattern(64), uint64(1))
	f.Add(pattern(3000), uint64(0xFFFFFFFF00000001))
	best := chosenKernel()
	f.Fuzz(func(t *testing.T, data []byte, seed uint64) {
		var start [8]uint64
		for i := range start {
			start[i] = seed * uint64(2*i+1)
		}
		stripes := min(len(data)/stripeLen, stripesPerBlk)
		blocks := len(data) / blockLen
		want := start
		accumulateScalar(&want, data, kSecret[:], stripes)
		wantBlocks := start
		accumulateBlocksScalar(&wantBlocks, data[:blocks*blockLen])
		for _, k := range []int32{useAVX2, useAVX512} {
			if k > best || stripes == 0 {
				continue
			}
			got, gotBlocks := start, start
			if k == useAVX2 {
				accumulateAVX2(&got, &data[0], &kSecret[0], stripes)
			} else {
				accumulateAVX512(&got, &data[0], &kSecret[0], stripes)
			}
			if blocks > 0 {
				if k == useAVX2 {
					accumulateBlocksAVX2(&gotBlocks, &data[0], &kSecret, blocks)
				} else {
					accumulateBlocksAVX512(&gotBlocks, &data[0], &kSecret, blocks)
				}
			}
			if got != want || gotBlocks != wantBlocks {
				t.Fatalf("kernel %d, %d bytes: stripes %x, scalar %x; blocks %x, scalar %x", k, len(data), got, want, gotBlocks, wantBlocks)
			}
		}
	})
}
