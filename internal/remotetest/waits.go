package remotetest

import (
	"context"
	"encoding/binary"
	"strings"
	"sync"
	"time"
)

// Waits records the waits between retries instead of sleeping: give
// Sleep to remote.WithWait.
type Waits struct {
	mu sync.Mutex
	d  []time.Duration
}

// Sleep records d and returns at once.
func (w *Waits) Sleep(ctx context.Context, d time.Duration) error {
	w.mu.Lock()
	w.d = append(w.d, d)
	w.mu.Unlock()
	return ctx.Err()
}

// List is the waits so far.
func (w *Waits) List() []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]time.Duration(nil), w.d...)
}

// PaddedFile is a safetensors file whose header is exactly n bytes: one
// F32 tensor "t" of two elements and metadata padding.
func PaddedFile(n int) []byte {
	head := `{"t":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"__metadata__":{"pad":"`
	tail := `"}}`
	h := head + strings.Repeat("x", n-len(head)-len(tail)) + tail
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
	b = append(b, h...)
	return append(b, 0, 0, 0x80, 0x3f, 0, 0, 0, 0x40) // 1.0, 2.0
}
