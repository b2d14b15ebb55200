package main

import (
	"context"
	"fmt"
	"os"

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
	var parts []verify.MergeInput
	for _, path := range cmd.Args().Slice() {
		if err := ctx.Err(); err != nil {
			return err
		}
		r, err := readReport(path)
		if err != nil {
			return err
		}
		parts = append(parts, verify.MergeInput{Name: path, Report: r})
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
	r, err := verify.ReadReport(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return r, nil
}
