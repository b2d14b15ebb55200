package remote

import (
	"sync"
)

// Read-ahead for remote files. Each ranged request costs a round trip, so
// reading a file at the speed of the link needs tens of megabytes in flight
// (3 GB/s × 20 ms is 60 MB). Reads that continue where the previous ones
// left off (the value engine reads tensors in file order) switch a file to
// whole chunks of aheadChunk bytes, requested up to aheadWindow chunks
// ahead of the reader, as an operating system's read-ahead does for a local
// file. A read elsewhere is one ranged request for just its bytes, so
// random access transfers nothing extra. Chunks are dropped once read;
// their buffers come from a free list of aheadBuffers shared by all files,
// so memory stays bounded whatever the checkpoint.

const (
	aheadChunk  = 8 << 20
	aheadWindow = 8 // chunks requested ahead, at most
	// aheadBuffers bounds the chunks held by all files at once (96 MiB).
	aheadBuffers = 12
)

// chunkBufs is the free list of chunk buffers, shared by every file; at
// most aheadBuffers are ever made.
var (
	chunkBufs  = make(chan []byte, aheadBuffers)
	chunkMu    sync.Mutex
	chunkCount int
)

// takeBuf returns a free chunk buffer, or nil when all are in use.
func takeBuf() []byte {
	select {
	case b := <-chunkBufs:
		return b
	default:
	}
	chunkMu.Lock()
	defer chunkMu.Unlock()
	if chunkCount >= aheadBuffers {
		return nil
	}
	chunkCount++
	return make([]byte, aheadChunk)
}

func putBuf(b []byte) { chunkBufs <- b[:cap(b)] }

type chunk struct {
	done chan struct{}
	data []byte
	err  error
	left int   // bytes not yet delivered
	refs int   // readers waiting on it or copying from it
	used int64 // when it was last asked for (a counter)
}

type readAhead struct {
	mu     sync.Mutex
	chunks map[int64]*chunk
	last   int64 // the chunk the latest read ended in
	window int   // chunks to request ahead
	clock  int64
}

// readAheadAt fills p from byte off through chunks, when the reads are
// sequential; it reports false when p should be read directly.
func (f *File) readAheadAt(p []byte, off int64) (bool, error) {
	first, last := off/aheadChunk, (off+int64(len(p))-1)/aheadChunk
	ra := &f.ahead
	ra.mu.Lock()
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
			for _, c := range need {
				c.refs--
			}
			ra.mu.Unlock()
			return false, nil
		}
		c.refs++
		need = append(need, c)
	}
	for k := last + 1; k <= last+int64(ra.window) && k*aheadChunk < f.size; k++ {
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
	buf := takeBuf()
	if buf == nil && now {
		f.evictLocked(-1)
		buf = takeBuf()
	}
	if buf == nil {
		return nil
	}
	n := int(min(aheadChunk, f.size-k*aheadChunk))
	c := &chunk{done: make(chan struct{}), data: buf[:n], left: n, used: ra.clock}
	ra.chunks[k] = c
	go func() {
		defer close(c.done)
		c.err = f.fetch(c.data, k*aheadChunk)
	}()
	return c
}

// evictLocked drops chunk k, or with k < 0 the least recently asked-for
// one, if it has arrived and no reader holds it.
func (f *File) evictLocked(k int64) {
	ra := &f.ahead
	victim, at := int64(-1), int64(0)
	for j, c := range ra.chunks {
		select {
		case <-c.done:
		default:
			continue
		}
		if c.refs == 0 && (j == k || (k < 0 && (victim < 0 || c.used < at))) {
			victim, at = j, c.used
		}
	}
	if victim >= 0 {
		recycle(ra.chunks[victim])
		delete(ra.chunks, victim)
	}
}

// delivered records n bytes copied out of chunk k by a reader that is done
// with it. A chunk whose bytes were all delivered, or that failed, is
// dropped; its buffer is reused once no reader holds it.
func (f *File) delivered(k int64, c *chunk, n int, failed bool) {
	ra := &f.ahead
	ra.mu.Lock()
	defer ra.mu.Unlock()
	c.refs--
	c.left -= n
	if (c.left <= 0 || failed) && ra.chunks[k] == c {
		delete(ra.chunks, k)
	}
	if ra.chunks[k] != c && c.refs == 0 {
		recycle(c)
	}
}

// recycle returns a chunk's buffer to the pool; the chunk has arrived and
// nobody holds it.
func recycle(c *chunk) {
	if c.data != nil {
		putBuf(c.data)
		c.data = nil
	}
}

// closeAhead returns the file's chunk buffers, waiting for requests still
// under way (the file's context is cancelled, so they end at once).
func (f *File) closeAhead() {
	ra := &f.ahead
	ra.mu.Lock()
	chunks := ra.chunks
	ra.chunks = nil
	ra.mu.Unlock()
	for _, c := range chunks {
		<-c.done
		ra.mu.Lock()
		if c.refs == 0 {
			recycle(c)
		}
		ra.mu.Unlock()
	}
}
