package safetensors

import (
	"strings"
	"unsafe"
)

// The parser stores a header's entries in chunks that it never grows in
// place: a slice grown by append copies itself and leaves the old array
// behind, which for a header of a million tensors is hundreds of MB of
// garbage (and the tool runs with the collector off below a soft limit, so
// garbage is resident memory). A chunk is allocated when the last is full;
// what is wasted is at most the unused end of one chunk.

// maxChunk bounds a chunk's length, so that the unused end of the last one
// is small next to the header it came from.
const maxChunk = 1 << 14

// chunks hands out elements of T from chunks of doubling length, up to
// maxChunk elements each. Pointers and slices it returns stay valid.
type chunks[T any] struct {
	done [][]T // the chunks before cur
	cur  []T
	next int // length of the next chunk
}

func (c *chunks[T]) grow(need int) {
	if len(c.cur) > 0 {
		c.done = append(c.done, c.cur)
	}
	c.next = min(max(c.next*2, 16), maxChunk)
	c.cur = make([]T, 0, max(c.next, need))
}

// one returns a new zero element.
func (c *chunks[T]) one() *T {
	if len(c.cur) == cap(c.cur) {
		c.grow(1)
	}
	c.cur = c.cur[:len(c.cur)+1]
	return &c.cur[len(c.cur)-1]
}

// push appends v to the run of elements that starts at start in the
// current chunk (len(c.cur) before the run's first push) and returns where
// the run starts now: a run that outgrows its chunk moves to a new one, so
// that c.run(start) is always one slice.
func (c *chunks[T]) push(start int, v T) int {
	if len(c.cur) == cap(c.cur) {
		run := c.cur[start:]
		c.grow(2 * (len(run) + 1)) // a long run doubles, as append would
		c.cur = append(c.cur, run...)
		start = 0
	}
	c.cur = append(c.cur, v)
	return start
}

// mark is where a run pushed next starts.
func (c *chunks[T]) mark() int { return len(c.cur) }

// run is the run from start to the last push, with no room to append.
func (c *chunks[T]) run(start int) []T { return c.cur[start:len(c.cur):len(c.cur)] }

// all is every chunk, in order.
func (c *chunks[T]) all() [][]T {
	if len(c.cur) == 0 {
		return c.done
	}
	return append(c.done, c.cur)
}

// names copies tensor names out of the header into chunks of bytes of
// their own, so that the header's buffer can be freed once it is parsed
// while the names, a fraction of it, live on.
type names struct{ cur []byte }

// nameChunk is the length of a chunk of names; a name longer than a
// quarter of it is copied on its own.
const nameChunk = 1 << 20

func (n *names) copy(s string) string {
	switch {
	case len(s) == 0:
		return ""
	case len(s) > nameChunk/4:
		return strings.Clone(s)
	case cap(n.cur)-len(n.cur) < len(s):
		n.cur = make([]byte, 0, nameChunk)
	}
	start := len(n.cur)
	n.cur = append(n.cur, s...)
	// The bytes are never written again: a chunk only grows at its end.
	return unsafe.String(&n.cur[start], len(s))
}
