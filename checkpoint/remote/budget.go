package remote

import (
	"context"
	"sync"
)

// probeBudget bounds the bytes that the first requests of one source's
// files buffer at once. Opening a file reads its first bytes whole (a
// JSON file up to jsonProbe), and a source that cannot list probes a
// dozen companion names at the same time: without a shared bound, a
// server that ignores Range (or sends large answers) would have every one
// of them buffer jsonProbe bytes, over a gigabyte. Each first request
// takes what its answer's headers say it needs before reading the body.
const probeBudget = 2 * jsonProbe

// A byteBudget is a count of bytes that may be buffered at once: a
// weighted semaphore. A request takes all it needs in one acquire and
// gives it back in one release, so two requests never wait for each other
// while holding a part.
type byteBudget struct {
	mu   sync.Mutex
	free int64
	size int64
	wake chan struct{} // closed when bytes are released
	// low is the least free ever seen, for tests.
	low int64
}

func newByteBudget(n int64) *byteBudget {
	return &byteBudget{free: n, size: n, low: n, wake: make(chan struct{})}
}

// acquire waits until n bytes (at most the whole budget) are free and
// takes them; it returns the function that gives them back, or ctx's error.
func (b *byteBudget) acquire(ctx context.Context, n int64) (func(), error) {
	n = min(max(n, 0), b.size)
	for {
		b.mu.Lock()
		if b.free >= n {
			b.free -= n
			b.low = min(b.low, b.free)
			b.mu.Unlock()
			var once sync.Once
			return func() { once.Do(func() { b.release(n) }) }, nil
		}
		wake := b.wake
		b.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (b *byteBudget) release(n int64) {
	b.mu.Lock()
	b.free += n
	close(b.wake)
	b.wake = make(chan struct{})
	b.mu.Unlock()
}

// peak is the most bytes ever taken at once.
func (b *byteBudget) peak() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.size - b.low
}
