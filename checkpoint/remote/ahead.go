package remote

import (
	"sync"
)

// Read-ahead for remote files. Each ranged request costs a round trip, so
// reading a file at the speed of the link needs tens of megabytes in flight
// (3 GB/s × 20 ms is 60 MB). Reads that continue where the previous ones
// left off (the value engine reads tensors in file order) switch a file to
// whole chunks of aheadChunk bytes, requested up to aheadWindow chunks
// ahead of the furthest read, as an operating system's read-ahead does for
// a local file. A read elsewhere is one ranged request for just its bytes, so
// random access transfers nothing extra. Chunks are dropped once read;
// their buffers come from a pool of aheadBuffers owned by the source (Base)
// the file belongs to, so memory stays bounded whatever the checkpoint: at
// most 96 MiB per remote source, 192 MiB for a diff of two.
//
// A buffer goes back to the pool only once its chunk's request has
// returned and no reader holds it: a chunk abandoned while its request is
// under way (a read before it failed, the run was cancelled, the file was
// closed) frees its buffer when the request ends, never while the request
// may still write into it.

const (
	aheadChunk  = 8 << 20
	aheadWindow = 8 // chunks requested ahead, at most
	// aheadBuffers bounds the chunks held by the files of one source at
	// once (96 MiB).
	aheadBuffers = 12
)

// A chunkPool is the chunk buffers of one source; at most aheadBuffers are
// ever made.
type chunkPool struct {
	free chan []byte
	mu   sync.Mutex
	made int
}

func newChunkPool() *chunkPool { return &chunkPool{free: make(chan []byte, aheadBuffers)} }

// take returns a free chunk buffer, or nil when all are in use.
func (p *chunkPool) take() []byte {
	select {
	case b := <-p.free:
		return b
	default:
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.made >= aheadBuffers {
		return nil
	}
	p.made++
	return make([]byte, aheadChunk)
}

func (p *chunkPool) put(b []byte) { p.free <- b[:cap(b)] }

type chunk struct {
	done chan struct{}
	// arrived is set, under the file's ahead.mu, when the request has
	// returned: only then may data go back to the pool.
	arrived bool
	data    []byte
	err     error
	left    int   // bytes not yet delivered
	refs    int   // readers waiting on it or copying from it
	used    int64 // when it was last asked for (a counter)
}

type readAhead struct {
	mu     sync.Mutex
	chunks map[int64]*chunk
	last   int64 // the chunk the latest read ended in
	window int   // chunks to request ahead
	clock  int64
	closed bool
	// fetches are the chunk requests under way; Close waits for them.
	fetches sync.WaitGroup
}

// readAheadAt fills p from byte off through chunks, when the reads are
// sequential; it reports false when p should be read directly.
func (f *File) readAheadAt(p []byte, off int64) (bool, error) {
	if f.pool == nil {
		return false, nil
	}
	first, last := off/aheadChunk, (off+int64(len(p))-1)/aheadChunk
	ra := &f.ahead
	ra.mu.Lock()
	if ra.closed {
		ra.mu.Unlock()
		return false, nil
	}
	if ra.chunks == nil {
		ra.chunks, ra.last = map[int64]*chunk{}, -3
	}
	// Concurrent readers of one stream arrive a little out of order: a
	// read in the chunk before, at or after the latest one continues it.
	_, cached := ra.chunks[first]
	sequential := cached || (first >= ra.last-1 && first <= ra.last+1)
	ra.last = max(ra.last, last)
	if !sequential {
		// A jump: what was read ahead for the old position is of no use.
		ra.window, ra.last = 0, last
		for k := range ra.chunks {
			f.evictLocked(k)
		}
		ra.mu.Unlock()
		return false, nil
	}
	ra.window = min(max(2*ra.window, 1), aheadWindow)
	need := make([]*chunk, 0, last-first+1)
	for k := first; k <= last; k++ {
		c := f.chunkLocked(k, true)
		if c == nil { // no buffer free: read directly
			for i, c := range need {
				c.refs--
				f.releaseLocked(first+int64(i), c)
			}
			ra.mu.Unlock()
			return false, nil
		}
		c.refs++
		need = append(need, c)
	}
	// Ahead of the furthest read, not of this one: a reader that lags
	// behind the others must not ask again for chunks they have consumed.
	for k := ra.last + 1; k <= ra.last+int64(ra.window) && k*aheadChunk < f.size; k++ {
		if f.chunkLocked(k, false) == nil {
			break
		}
	}
	ra.mu.Unlock()

	var err error
	for i, c := range need {
		k := first + int64(i)
		if err == nil {
			select {
			case <-c.done:
				err = c.err
			case <-f.ctx.Done():
				err = f.ctx.Err()
			}
		}
		n := 0
		if err == nil {
			n = copy(p, c.data[max(off-k*aheadChunk, 0):])
			p, off = p[n:], off+int64(n)
		}
		f.delivered(k, c, n, err != nil)
	}
	return true, err
}

// chunkLocked returns chunk k, starting its request if it has none; nil
// when no buffer is free (for a chunk the reader needs now, after dropping
// the file's least recently used one). The caller holds f.ahead.mu.
func (f *File) chunkLocked(k int64, now bool) *chunk {
	ra := &f.ahead
	ra.clock++
	if c, ok := ra.chunks[k]; ok {
		c.used = ra.clock
		return c
	}
	buf := f.pool.take()
	if buf == nil && now {
		f.evictLocked(-1)
		buf = f.pool.take()
	}
	if buf == nil {
		return nil
	}
	n := int(min(aheadChunk, f.size-k*aheadChunk))
	c := &chunk{done: make(chan struct{}), data: buf[:n], left: n, used: ra.clock}
	ra.chunks[k] = c
	ra.fetches.Go(func() {
		err := f.fetch(c.data, k*aheadChunk)
		ra.mu.Lock()
		defer ra.mu.Unlock()
		c.err, c.arrived = err, true
		close(c.done)
		f.releaseLocked(k, c) // abandoned while under way
	})
	return c
}

// evictLocked drops chunk k, or with k < 0 the least recently asked-for
// one, if it has arrived and no reader holds it.
func (f *File) evictLocked(k int64) {
	ra := &f.ahead
	victim, at := int64(-1), int64(0)
	for j, c := range ra.chunks {
		if c.arrived && c.refs == 0 && (j == k || (k < 0 && (victim < 0 || c.used < at))) {
			victim, at = j, c.used
		}
	}
	if victim >= 0 {
		c := ra.chunks[victim]
		delete(ra.chunks, victim)
		f.releaseLocked(victim, c)
	}
}

// delivered records n bytes copied out of chunk k by a reader that is done
// with it. A chunk whose bytes were all delivered, or that failed, is
// dropped; its buffer is reused once its request has returned and no
// reader holds it.
func (f *File) delivered(k int64, c *chunk, n int, failed bool) {
	ra := &f.ahead
	ra.mu.Lock()
	defer ra.mu.Unlock()
	c.refs--
	c.left -= n
	if (c.left <= 0 || failed) && ra.chunks[k] == c {
		delete(ra.chunks, k)
	}
	f.releaseLocked(k, c)
}

// releaseLocked returns chunk k's buffer to the pool when the chunk has
// been dropped, its request has returned and no reader holds it. The
// caller holds f.ahead.mu.
func (f *File) releaseLocked(k int64, c *chunk) {
	if c.data == nil || !c.arrived || c.refs > 0 || f.ahead.chunks[k] == c {
		return
	}
	f.pool.put(c.data)
	c.data = nil
}

// closeAhead drops the file's chunks and waits for the requests still
// under way (the file's context is cancelled, so they end at once); each
// buffer goes back to the pool when its request has returned and its last
// reader is done with it.
func (f *File) closeAhead() {
	ra := &f.ahead
	ra.mu.Lock()
	chunks := ra.chunks
	ra.chunks, ra.closed = nil, true
	for k, c := range chunks {
		f.releaseLocked(k, c)
	}
	ra.mu.Unlock()
	ra.fetches.Wait()
}
