package main

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/urfave/cli/v3"

	"github.com/ckptcheck/ckptcheck/checkpoint"
	"github.com/ckptcheck/ckptcheck/internal/wholefile"
	"github.com/ckptcheck/ckptcheck/manifest"
	"github.com/ckptcheck/ckptcheck/partition"
	"github.com/ckptcheck/ckptcheck/report"
	"github.com/ckptcheck/ckptcheck/verify"
)

func manifestCommand() *cli.Command {
	return &cli.Command{
		Name:      "manifest",
		Usage:     "write a checkpoint's manifest (every file's SHA-256, every tensor's dtype, shape and xxh3) as JSON on stdout",
		ArgsUsage: "PATH",
		Description: "Reads every file once. A checkpoint with validation errors gets no manifest: its errors are " +
			"printed on stderr and the exit status is 1. Check a checkpoint against it with validate --manifest.",
		Flags: append([]cli.Flag{
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no progress line"},
			filePartitionFlag,
		}, remoteFlags()...),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if err := needArgs(cmd, 1, 1, "PATH"); err != nil {
				return err
			}
			part, err := partitionOf(cmd)
			if err != nil {
				return err
			}
			c, err := open(ctx, cmd.Args().First(), openOptions(cmd))
			if err != nil {
				return err
			}
			defer c.Close()
			findings, err := verify.Validate(ctx, c)
			if err != nil {
				return err
			}
			rep := verify.NewReport("manifest", verify.Error, []verify.Input{verify.DescribeInput(c, "")}, findings)
			baselineOf(cmd).Apply(rep)
			if !rep.OK {
				if err := report.Text(cmd.Root().ErrWriter, rep, report.Options{}); err != nil {
					return err
				}
				fmt.Fprintf(cmd.Root().ErrWriter, "no manifest written: %s has errors\n", c.Path)
				return errFindings
			}
			m, err := buildManifestPart(ctx, cmd, c, part)
			if err != nil {
				return changedFirst(err, c)
			}
			if err := c.Unchanged(); err != nil {
				return err
			}
			return m.WriteJSON(cmd.Root().Writer)
		},
	}
}

// buildManifest hashes every file of c, with a progress line on a terminal.
func buildManifest(ctx context.Context, cmd *cli.Command, c *checkpoint.Checkpoint) (*manifest.Manifest, error) {
	return buildManifestPart(ctx, cmd, c, partition.Partition{})
}

// buildManifestPart hashes the files of partition part of c (all of them
// when part is the zero Partition); a partial manifest says which.
func buildManifestPart(ctx context.Context, cmd *cli.Command, c *checkpoint.Checkpoint, part partition.Partition) (*manifest.Manifest, error) {
	all, err := manifest.Work(ctx, c)
	if err != nil {
		return nil, err
	}
	files := all
	var covered []verify.Covered
	if part.Count > 0 {
		files, covered = manifest.SelectFiles(all, part)
	}
	var total int64
	for _, f := range files {
		total += f.Size
	}
	opt := manifest.Options{Tool: "ckptcheck " + version()}
	bar := newProgressLabeled(cmd, total, "hashing")
	if bar != nil {
		var done atomic.Int64
		opt.Progress = func(n int64) { bar.update(done.Add(n), total) }
	}
	m, err := manifest.Build(ctx, c, files, opt)
	bar.finish()
	if err != nil || part.Count == 0 {
		return m, err
	}
	settings, err := judgementSettings(cmd)
	if err != nil {
		return nil, err
	}
	m.Partition = &manifest.Part{Partition: part, Fingerprint: manifest.FilesFingerprint(c, all, settings), Items: len(all), Files: covered}
	return m, nil
}

// readManifest reads a manifest file for validate --manifest.
func readManifest(path string) (*manifest.Manifest, error) {
	f, err := wholefile.Open(path, manifestLimit)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m, err := manifest.Read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return m, nil
}

// checkHashes runs validate --hashes on one checkpoint, or on the files
// of partition part of it; it returns the files' places among them all.
func checkHashes(ctx context.Context, cmd *cli.Command, c *checkpoint.Checkpoint, part partition.Partition) ([]verify.Finding, []checkpoint.FileInfo, []verify.Covered, error) {
	all, err := manifest.HashWork(ctx, c)
	if err != nil {
		return nil, nil, nil, err
	}
	files := all
	var covered []verify.Covered
	if part.Count > 0 {
		files, covered = manifest.SelectFiles(all, part)
	}
	if len(all) == 0 {
		return nil, nil, nil, fmt.Errorf("%s: --hashes: no file here is named by its hash; it checks hub-cache snapshots (a repo id org/name, or a models--org--name/snapshots/COMMIT folder)", c.Path)
	}
	var total int64
	for _, f := range files {
		total += f.Size
	}
	var opt manifest.HashOptions
	bar := newProgressLabeled(cmd, total, "hashing")
	if bar != nil {
		var done atomic.Int64
		opt.Progress = func(n int64) { bar.update(done.Add(n), total) }
	}
	fs, err := manifest.CheckHashes(ctx, c, files, opt)
	bar.finish()
	return fs, all, covered, err
}
