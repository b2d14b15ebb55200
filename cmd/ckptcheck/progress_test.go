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
			line := progressLine("comparing values", done, 1_200_000_000, 3*time.Second, width)
			if len(line) > max(width-1, 0) {
				t.Fatalf("width %d: %d columns: %q", width, len(line), line)
			}
		}
	}
	if l := progressLine("comparing values", 600, 1200, time.Second, 120); !strings.Contains(l, "50%") || !strings.Contains(l, "comparing values") || !strings.Contains(l, "left") {
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
// fits the width of its moment. It waits for the drawing goroutine to show
// each width rather than for a time, so a slow machine only makes it slower.
func TestProgressFollowsResize(t *testing.T) {
	var out syncBuffer
	var mu sync.Mutex
	width := 120
	lines := func() []string {
		var ls []string
		for _, l := range strings.Split(out.String(), "\r") {
			ls = append(ls, strings.TrimSuffix(l, "\x1b[K"))
		}
		return ls
	}
	// waitFor returns the index of the first line that satisfies ok.
	waitFor := func(what string, ok func(string) bool) int {
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			for i, l := range lines() {
				if ok(l) {
					return i
				}
			}
		}
		ls := lines()
		t.Fatalf("no %s line in %d drawn; the last: %q", what, len(ls), ls[max(len(ls)-3, 0):])
		return 0
	}
	p := startProgress(&out, "comparing values", func() int { mu.Lock(); defer mu.Unlock(); return width }, 1000, time.Millisecond)
	p.update(500, 1000)
	waitFor("wide", func(l string) bool { return len(l) > 29 })
	mu.Lock()
	width = 30
	mu.Unlock()
	p.update(600, 1000)
	narrow := waitFor("narrow", func(l string) bool { return len(l) > 0 && len(l) <= 29 })
	p.finish()
	for i, l := range lines() {
		// A draw that read the width before the change may still land
		// after it; once a narrow line is drawn, every later one is narrow.
		if len(l) > 119 || (i > narrow && len(l) > 29) {
			t.Errorf("line %d of %d columns (narrow from line %d): %q", i, len(l), narrow, l)
		}
	}
}
