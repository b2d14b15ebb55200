package main

import (
	"context"

	"github.com/urfave/cli/v3"

	"github.com/ckptcheck/ckptcheck/safetensors"
	"github.com/ckptcheck/ckptcheck/verify"
)

func validateCommand() *cli.Command {
	return &cli.Command{
		Name:      "validate",
		Usage:     "check checkpoints against the format, their index and their config",
		ArgsUsage: "PATH...",
		Description: "PATH is a .safetensors file, a *.safetensors.index.json, a directory, " +
			"or a Hugging Face repo id org/name[@revision] in the local hub cache.",
		Flags: []cli.Flag{formatFlag, failOnFlag, verboseFlag},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if err := needArgs(cmd, 1, -1, "PATH..."); err != nil {
				return err
			}
			var inputs []verify.Input
			var findings []verify.Finding
			for _, path := range cmd.Args().Slice() {
				c, err := safetensors.OpenCheckpoint(path)
				if err != nil {
					return err
				}
				inputs = append(inputs, describe(c, ""))
				findings = append(findings, verify.Validate(c)...)
				c.Close()
			}
			return emit(cmd, verify.NewReport("validate", failOn(cmd), inputs, findings))
		},
	}
}

// describe is a checkpoint as the report lists it.
func describe(c *safetensors.Checkpoint, side string) verify.Input {
	in := verify.Input{Side: side, Path: c.Path, Tensors: c.NumTensors(), Files: []string{}}
	if c.Index != nil {
		in.Index = c.Index.Path
	}
	if c.Config != nil {
		in.Config = c.Config.Path
	}
	for _, s := range c.Shards {
		in.Files = append(in.Files, s.Name)
	}
	return in
}
