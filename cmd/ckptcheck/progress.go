package main

import (
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/urfave/cli/v3"
	"golang.org/x/term"
)

// progress is the bar `diff --values` draws on stderr: bytes compared out of
// the total, rate and ETA. schollz/progressbar handles terminal width, the
// rate estimate and redrawing, which we would otherwise write and maintain.
// Workers only store counters; one goroutine draws.
type progress struct {
	bar         *progressbar.ProgressBar
	done, total atomic.Int64
	stop        chan struct{}
	wg          sync.WaitGroup
}

// newProgress returns a running bar when stderr is a terminal, --quiet is
// off and CI is unset; nil otherwise. A nil *progress is a no-op.
func newProgress(cmd *cli.Command, total int64) *progress {
	return newProgressLabeled(cmd, total, "comparing values")
}

// newProgressLabeled is newProgress with another description.
func newProgressLabeled(cmd *cli.Command, total int64, what string) *progress {
	if cmd.Bool("quiet") || os.Getenv("CI") != "" || cmd.Root().ErrWriter != os.Stderr || !term.IsTerminal(int(os.Stderr.Fd())) {
		return nil
	}
	p := &progress{stop: make(chan struct{})}
	p.total.Store(max(total, 1))
	p.bar = progressbar.NewOptions64(p.total.Load(),
		progressbar.OptionSetWriter(os.Stderr),
		progressbar.OptionSetDescription(what),
		progressbar.OptionShowBytes(true),
		progressbar.OptionSetWidth(30),
		progressbar.OptionShowCount(),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionSetPredictTime(true),
	)
	p.wg.Go(func() {
		tick := time.NewTicker(150 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-tick.C:
				p.draw()
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

func (p *progress) draw() {
	if t := p.total.Load(); t != p.bar.GetMax64() {
		p.bar.ChangeMax64(t)
	}
	_ = p.bar.Set64(min(p.done.Load(), p.total.Load()-1)) // the bar closes itself at its max
}

func (p *progress) finish() {
	if p != nil {
		close(p.stop)
		p.wg.Wait()
		_ = p.bar.Finish()
	}
}
