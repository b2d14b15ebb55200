package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/urfave/cli/v3"
	"golang.org/x/term"

	"github.com/ckptcheck/ckptcheck/internal/textfmt"
)

// progress is the line `diff --values` draws on stderr: bytes compared out
// of the total, rate and time left. Workers only store counters; one
// goroutine draws, fitting the line to the terminal's width at every draw,
// so that it never wraps, also after a resize.
type progress struct {
	w           io.Writer
	what        string // "comparing values", "hashing"
	width       func() int
	done, total atomic.Int64
	start       time.Time
	stop        chan struct{}
	wg          sync.WaitGroup
}

// newProgress returns a running progress line when stderr is a terminal,
// --quiet is off and CI is unset; nil otherwise. A nil *progress is a no-op.
func newProgress(cmd *cli.Command, total int64) *progress {
	return newProgressLabeled(cmd, total, "comparing values")
}

// newProgressLabeled is newProgress saying what it does.
func newProgressLabeled(cmd *cli.Command, total int64, what string) *progress {
	if cmd.Bool("quiet") || os.Getenv("CI") != "" || cmd.Root().ErrWriter != os.Stderr || !term.IsTerminal(int(os.Stderr.Fd())) {
		return nil
	}
	width := func() int {
		w, _, err := term.GetSize(int(os.Stderr.Fd()))
		if err != nil {
			return 80
		}
		return w
	}
	return startProgress(os.Stderr, what, width, total, 200*time.Millisecond)
}

func startProgress(w io.Writer, what string, width func() int, total int64, every time.Duration) *progress {
	p := &progress{w: w, what: what, width: width, start: time.Now(), stop: make(chan struct{})}
	p.total.Store(max(total, 1))
	p.wg.Go(func() {
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-tick.C:
				fmt.Fprint(p.w, "\r"+progressLine(p.what, p.done.Load(), p.total.Load(), time.Since(p.start), p.width())+"\x1b[K")
			}
		}
	})
	return p
}

// update records progress; safe for concurrent use.
func (p *progress) update(done, total int64) {
	p.done.Store(done)
	p.total.Store(total)
}

// finish stops drawing and clears the line.
func (p *progress) finish() {
	if p != nil {
		close(p.stop)
		p.wg.Wait()
		fmt.Fprint(p.w, "\r\x1b[K")
	}
}

// progressLine is the line for width columns, at most width-1 long (a
// character in the last column makes some terminals wrap): the parts that
// do not fit are left out, least useful first.
func progressLine(what string, done, total int64, elapsed time.Duration, width int) string {
	done = min(max(done, 0), total)
	pct := 100 * float64(done) / float64(max(total, 1))
	rate := float64(done) / max(elapsed.Seconds(), 1e-3)
	left := "?"
	if rate > 0 && done > 0 {
		left = time.Duration(float64(total-done) / rate * float64(time.Second)).Round(time.Second).String()
	}
	parts := []string{
		fmt.Sprintf("%3.0f%%", pct),
		what,
		humanBytes(done) + " / " + humanBytes(total),
		humanBytes(int64(rate)) + "/s",
		left + " left",
	}
	// Drop parts until the text leaves room for a bar of at least 10.
	for drop := []int{1, 4, 3, 2}; len(strings.Join(parts, "  "))+14 > width-1 && len(drop) > 0; drop = drop[1:] {
		parts[drop[0]] = ""
	}
	var kept []string
	for _, s := range parts {
		if s != "" {
			kept = append(kept, s)
		}
	}
	text := strings.Join(kept, "  ")
	barWidth := min(30, width-1-len(text)-3)
	if barWidth < 4 {
		return truncate(text, width-1)
	}
	filled := int(float64(barWidth) * pct / 100)
	return "[" + strings.Repeat("=", filled) + strings.Repeat(" ", barWidth-filled) + "] " + text
}

func truncate(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if len(s) > n {
		return s[:n]
	}
	return s
}

// humanBytes writes decimal sizes for the progress line: 1.2 GB.
func humanBytes(n int64) string {
	v := float64(n)
	units := []string{"B", "kB", "MB", "GB", "TB"}
	i := 0
	for v >= 1000 && i < len(units)-1 {
		v /= 1000
		i++
	}
	if i == 0 {
		return textfmt.Thousands(n) + " B"
	}
	return fmt.Sprintf("%.1f %s", v, units[i])
}
