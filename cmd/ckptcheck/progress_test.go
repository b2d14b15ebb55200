package main

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestProgressLineFits(t *testing.T) {
	for width := 0; width <= 200; width++ {
		for _, done := range []int64{0, 1, 123_456_789, 1_200_000_000} {
			line := progressLine(done, 1_200_000_000, 3*time.Second, width)
			if len(line) > max(width-1, 0) {
				t.Fatalf("width %d: %d columns: %q", width, len(line), line)
			}
		}
	}
	if l := progressLine(600, 1200, time.Second, 120); !strings.Contains(l, "50%") || !strings.Contains(l, "comparing values") || !strings.Contains(l, "left") {
		t.Errorf("wide line lacks parts: %q", l)
	}
}

// syncBuffer is a bytes.Buffer safe for the drawing goroutine and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestProgressFollowsResize draws while the terminal narrows: every line
// fits the width of its moment.
func TestProgressFollowsResize(t *testing.T) {
	var out syncBuffer
	var mu sync.Mutex
	width := 120
	p := startProgress(&out, func() int { mu.Lock(); defer mu.Unlock(); return width }, 1000, time.Millisecond)
	for i := range 50 {
		p.update(int64(i*20), 1000)
		if i == 25 {
			mu.Lock()
			width = 30
			mu.Unlock()
		}
		time.Sleep(2 * time.Millisecond)
	}
	p.finish()
	lines := strings.Split(out.String(), "\r")
	narrow := false
	for _, l := range lines {
		l = strings.TrimSuffix(l, "\x1b[K")
		if len(l) > 119 {
			t.Fatalf("line wider than the terminal: %q", l)
		}
		narrow = narrow || (len(l) > 0 && len(l) <= 29)
	}
	if !narrow {
		t.Error("no line drawn for the narrow terminal")
	}
}
