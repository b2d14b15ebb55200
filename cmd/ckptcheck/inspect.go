package main

import (
	"context"

	"github.com/urfave/cli/v3"

	"github.com/ckptcheck/ckptcheck/adapter"
	"github.com/ckptcheck/ckptcheck/checkpoint"
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
			// A folder of variants and no plain one (GGUF quantizations) is
			// inspected one checkpoint after another, into one report.
			var inputs []verify.Input
			var findings []verify.Finding
			var inspections []verify.VariantInspection
			taken, err := eachVariant(ctx, cmd, cmd.Args().First(), variantScope{noPlain: true}, func(c *checkpoint.Checkpoint) error {
				fs, err := verify.Validate(ctx, c)
				if err != nil {
					return err
				}
				ins := verify.Inspect(c, filter, cmd.Bool("tree"))
				if err := c.Unchanged(); err != nil {
					return err
				}
				inputs, findings = append(inputs, verify.DescribeInput(c, "")), append(findings, fs...)
				inspections = append(inspections, verify.VariantInspection{Variant: c.Variant, Path: c.Path, Inspection: ins})
				return nil
			})
			if err != nil {
				return err
			}
			if taken > 1 {
				findings = withoutVariantsNotes(findings)
			}
			rep, err := newReport(cmd, "inspect", inputs, findings)
			if err != nil {
				return err
			}
			if len(inspections) == 1 {
				rep.Inspection = inspections[0].Inspection
			} else {
				rep.Inspections = inspections
			}
			return emit(cmd, rep, report.Options{Depth: int(cmd.Int("depth"))})
		},
	}
}
