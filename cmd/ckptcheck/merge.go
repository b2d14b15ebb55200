package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"runtime"
	"sync"

	"github.com/urfave/cli/v3"

	"github.com/ckptcheck/ckptcheck/report"
	"github.com/ckptcheck/ckptcheck/verify"
)

func mergeCommand() *cli.Command {
	return &cli.Command{
		Name:      "merge",
		Usage:     "merge the JSON reports of diff --values --partition runs into one report",
		ArgsUsage: "REPORT.json...",
		Description: "Reads the reports of the n partitions of one run (diff --values --partition i/n --format json) and " +
			"prints the report the run would have made whole, with one exit status. Reports of another run (another " +
			"fingerprint: other inputs, flags or ckptcheck version) are refused; a partition missing or given twice is " +
			"an error finding.",
		Flags:  []cli.Flag{formatFlag, failOnFlag, verboseFlag, htmlFlag},
		Action: runMerge,
	}
}

func runMerge(ctx context.Context, cmd *cli.Command) error {
	if err := needArgs(cmd, 1, -1, "REPORT.json..."); err != nil {
		return err
	}
	// Decoding the reports is most of a merge: one per core at a time.
	paths := cmd.Args().Slice()
	parts := make([]verify.MergeInput, len(paths))
	errs := make([]error, len(paths))
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i, path := range paths {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if errs[i] = ctx.Err(); errs[i] == nil {
				parts[i].Name = path
				parts[i].Report, errs[i] = readReport(path)
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err // the first in the order given
		}
	}
	rep, err := verify.Merge(parts, failOn(cmd))
	if err != nil {
		return err
	}
	if err := writeHTML(cmd, rep); err != nil {
		return err
	}
	return emit(cmd, rep, report.Options{})
}

func readReport(path string) (*verify.Report, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err // *fs.PathError names the path
	}
	defer f.Close()
	r, err := verify.ReadReport(bufio.NewReaderSize(f, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return r, nil
}
