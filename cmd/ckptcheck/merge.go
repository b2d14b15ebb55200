package main

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"sync"

	"github.com/urfave/cli/v3"

	"github.com/ckptcheck/ckptcheck/internal/wholefile"
	"github.com/ckptcheck/ckptcheck/manifest"
	"github.com/ckptcheck/ckptcheck/report"
	"github.com/ckptcheck/ckptcheck/verify"
)

func mergeCommand() *cli.Command {
	return &cli.Command{
		Name:      "merge",
		Usage:     "merge the JSON reports (or partial manifests) of --partition runs into one",
		ArgsUsage: "REPORT.json...",
		Description: "Reads the reports of the n partitions of one run (diff --values or --lora --partition i/n --format json, or " +
			"validate --hashes --partition i/n --format json) and prints the report the run would have made whole, with " +
			"one exit status. Reports of another run (another fingerprint: other inputs, flags or ckptcheck version) are " +
			"refused; a partition missing or given twice is an error finding. Partial manifests (manifest --partition i/n) " +
			"merge into the whole manifest, printed as JSON; a missing part is an error there, since a manifest needs every file.",
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
	parts := make([]mergePart, len(paths))
	errs := make([]error, len(paths))
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i, path := range paths {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if errs[i] = ctx.Err(); errs[i] == nil {
				parts[i], errs[i] = readMergePart(path)
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err // the first in the order given
		}
	}
	if parts[0].Manifest != nil {
		var ms []manifest.Input
		for _, p := range parts {
			if p.Manifest == nil {
				return fmt.Errorf("%s is a report but %s is a manifest: merge one kind at a time", p.Name, parts[0].Name)
			}
			ms = append(ms, manifest.Input{Name: p.Name, Manifest: p.Manifest})
		}
		m, err := manifest.MergeParts(ms)
		if err != nil {
			return err
		}
		return m.WriteJSON(cmd.Root().Writer)
	}
	reports := make([]verify.MergeInput, len(parts))
	for i, p := range parts {
		if p.Report == nil {
			return fmt.Errorf("%s is a manifest but %s is a report: merge one kind at a time", p.Name, parts[0].Name)
		}
		reports[i] = verify.MergeInput{Name: p.Name, Report: p.Report}
	}
	rep, err := verify.Merge(reports, failOn(cmd))
	if err != nil {
		return err
	}
	if err := writeHTML(cmd, rep); err != nil {
		return err
	}
	return emit(cmd, rep, report.Options{})
}

// A mergePart is a report or a partial manifest, read from Name.
type mergePart struct {
	Name     string
	Report   *verify.Report
	Manifest *manifest.Manifest
}

// readMergePart reads a report, or a manifest when the file's schema says
// it is one.
func readMergePart(path string) (mergePart, error) {
	b, err := wholefile.ReadFile(path, mergeInputLimit)
	if err != nil {
		return mergePart{}, err
	}
	// The schema member decides, wherever it is and however it is spaced.
	if manifest.IsManifest(b) {
		m, err := manifest.Read(bytes.NewReader(b))
		if err != nil {
			return mergePart{}, fmt.Errorf("%s: %v", path, err)
		}
		return mergePart{Name: path, Manifest: m}, nil
	}
	r, err := verify.ReadReport(bytes.NewReader(b))
	if err != nil {
		return mergePart{}, fmt.Errorf("%s: %v", path, err)
	}
	return mergePart{Name: path, Report: r}, nil
}
