package main

import (
	"context"

	"github.com/urfave/cli/v3"

	"github.com/ckptcheck/ckptcheck/report"
	"github.com/ckptcheck/ckptcheck/verify"
)

func validateCommand() *cli.Command {
	return &cli.Command{
		Name:      "validate",
		Usage:     "check checkpoints against the format, their index and their config",
		ArgsUsage: "PATH...",
		Description: "PATH is a .safetensors file, a *.safetensors.index.json, a directory, " +
			"a Hugging Face repo id org/name[@revision] in the local hub cache, or a remote path: " +
			"an https:// URL of a file or index, hf://org/name[@revision][/folder], s3://bucket/prefix.",
		Flags: append([]cli.Flag{formatFlag, failOnFlag, verboseFlag}, remoteFlags()...),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if err := needArgs(cmd, 1, -1, "PATH..."); err != nil {
				return err
			}
			var inputs []verify.Input
			var findings []verify.Finding
			for _, path := range cmd.Args().Slice() {
				c, err := open(ctx, path, openOptions(cmd))
				if err != nil {
					return err
				}
				inputs = append(inputs, verify.DescribeInput(c, ""))
				findings = append(findings, verify.Validate(c)...)
				err = c.Unchanged()
				c.Close()
				if err != nil {
					return err
				}
			}
			return emit(cmd, verify.NewReport("validate", failOn(cmd), inputs, findings), report.Options{})
		},
	}
}
