//go:build linux || darwin

package safetensors

import "syscall"

// minMappedHeader is the header length from which its buffer is mapped
// outside the Go heap: below it the heap is cheaper than a system call.
const minMappedHeader = 1 << 20

// headerBuffer returns a buffer of n bytes for a header, and the function
// that frees it. A large header's buffer is an anonymous mapping, given
// back to the system as soon as the header is parsed: on the heap it would
// stay resident until the collector ran, and the tool runs with the
// collector off below a soft limit. Nothing read from the buffer may
// outlive free (the parser copies names and metadata out).
func headerBuffer(n int) ([]byte, func()) {
	if n < minMappedHeader {
		return make([]byte, n), func() {}
	}
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return make([]byte, n), func() {}
	}
	return b, func() { syscall.Munmap(b) }
}
