package main

import (
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/urfave/cli/v3"
	"golang.org/x/term"
)

// progress is the bar `diff --values` draws on stderr: bytes compared out of
// the total, rate and ETA. schollz/progressbar handles terminal width,
// throttling and the rate estimate, which we would otherwise write and
// maintain ourselves.
type progress struct {
	bar *progressbar.ProgressBar
}

// newProgress returns a bar when stderr is a terminal, --quiet is off and
// CI is unset; nil otherwise. A nil *progress is a no-op.
func newProgress(cmd *cli.Command, total int64) *progress {
	if cmd.Bool("quiet") || os.Getenv("CI") != "" || cmd.Root().ErrWriter != os.Stderr || !isTerminal(os.Stderr) {
		return nil
	}
	bar := progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(os.Stderr),
		progressbar.OptionSetDescription("comparing values"),
		progressbar.OptionShowBytes(true),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionShowCount(),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionSetPredictTime(true),
	)
	return &progress{bar: bar}
}

func (p *progress) add(n int64) {
	_ = p.bar.Add64(n) // the bar is safe for concurrent use
}

func (p *progress) finish() {
	if p != nil {
		_ = p.bar.Finish()
	}
}

func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }
