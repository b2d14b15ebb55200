package main

import (
	"context"

	"github.com/urfave/cli/v3"

	"github.com/ckptcheck/ckptcheck/adapter"
	"github.com/ckptcheck/ckptcheck/report"
	"github.com/ckptcheck/ckptcheck/verify"
)

func inspectCommand() *cli.Command {
	return &cli.Command{
		Name:      "inspect",
		Usage:     "list a checkpoint's tensors, dtypes, shapes and parameter counts (headers only)",
		ArgsUsage: "PATH",
		Flags: append([]cli.Flag{
			formatFlag, failOnFlag, verboseFlag, ignoreFlag, variantFlag,
			&cli.StringFlag{Name: "filter", Usage: "only tensors whose name matches `GLOB` (* matches any run of characters, dots included; ? one character)"},
			&cli.BoolFlag{Name: "tree", Usage: "show the module tree with parameter counts instead of the tensor list"},
			&cli.IntFlag{Name: "depth", Usage: "with --tree, show `N` levels (0: all)"},
		}, remoteFlags()...),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if err := needArgs(cmd, 1, 1, "PATH"); err != nil {
				return err
			}
			if cmd.Int("depth") < 0 {
				return usageError("--depth must be 0 or more")
			}
			if cmd.IsSet("depth") && !cmd.Bool("tree") {
				return usageError("--depth needs --tree")
			}
			var filter *adapter.Glob
			if f := cmd.String("filter"); f != "" {
				filter = adapter.CompileGlob(f)
			}
			if _, err := ignores(cmd); err != nil {
				return err
			}
			if path := cmd.Args().First(); verify.IsDCPDir(path) {
				in, findings, err := validateDCP(path)
				if err != nil {
					return err
				}
				rep, err := newReport(cmd, "inspect", []verify.Input{in.Input}, findings)
				if err != nil {
					return err
				}
				rep.Inspection = verify.InspectDCP(in.step, filter, cmd.Bool("tree"))
				return emit(cmd, rep, report.Options{Depth: int(cmd.Int("depth"))})
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
			rep, err := newReport(cmd, "inspect", []verify.Input{verify.DescribeInput(c, "")}, findings)
			if err != nil {
				return err
			}
			rep.Inspection = verify.Inspect(c, filter, cmd.Bool("tree"))
			if err := c.Unchanged(); err != nil {
				return err
			}
			return emit(cmd, rep, report.Options{Depth: int(cmd.Int("depth"))})
		},
	}
}
