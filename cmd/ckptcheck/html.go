package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v3"

	"github.com/ckptcheck/ckptcheck/report"
	"github.com/ckptcheck/ckptcheck/verify"
)

var htmlFlag = &cli.StringFlag{
	Name:      "html",
	Usage:     "also write the report as one self-contained HTML page to `FILE` (with --values, a heatmap of the changes per layer and tensor)",
	TakesFile: true,
}

// writeHTML writes the report's HTML page where --html says, if it does.
// The page is written whole or not at all: a failed write removes it.
func writeHTML(cmd *cli.Command, r *verify.Report) error {
	path := cmd.String("html")
	if path == "" {
		return nil
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("--html: %w", err)
	}
	opt := report.Options{Verbose: cmd.Bool("verbose"), Version: version()}
	err = report.HTML(f, r, opt)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return fmt.Errorf("--html %s: %w", path, err)
	}
	return nil
}
