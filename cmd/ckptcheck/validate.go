package main

import (
	"context"
	"path/filepath"

	"github.com/urfave/cli/v3"

	"github.com/ckptcheck/ckptcheck/checkpoint"
	"github.com/ckptcheck/ckptcheck/manifest"
	"github.com/ckptcheck/ckptcheck/partition"
	"github.com/ckptcheck/ckptcheck/report"
	"github.com/ckptcheck/ckptcheck/torchsave"
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
		Flags: append([]cli.Flag{formatFlag, failOnFlag, verboseFlag, ignoreFlag, variantFlag,
			&cli.BoolFlag{Name: "hashes", Usage: "check every file of a hub-cache snapshot against its blob's name (SHA-256, or git blob SHA-1); reads all the data"},
			&cli.StringFlag{Name: "manifest", Usage: "check the checkpoint against a manifest `FILE` written by ckptcheck manifest; reads all the data", TakesFile: true},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no progress line"},
			filePartitionFlag,
			&cli.StringFlag{Name: "base", Usage: "check each PATH as a PEFT LoRA adapter of the base model at `BASE` (its adapter_config.json's base_model_name_or_path is reported, never fetched)"},
		}, remoteFlags()...),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if err := needArgs(cmd, 1, -1, "PATH..."); err != nil {
				return err
			}
			if _, err := ignores(cmd); err != nil {
				return err
			}
			if cmd.String("base") != "" {
				return runValidateBase(ctx, cmd)
			}
			part, err := partitionOf(cmd)
			if err != nil {
				return err
			}
			if part.Count > 0 {
				return validateHashesPart(ctx, cmd, part)
			}
			var recorded *manifest.Manifest
			if file := cmd.String("manifest"); file != "" {
				if cmd.NArg() != 1 {
					return usageError("--manifest describes one checkpoint: give one PATH")
				}
				var err error
				if recorded, err = readManifest(file); err != nil {
					return err
				}
			}
			var inputs []verify.Input
			var findings []verify.Finding
			for _, path := range cmd.Args().Slice() {
				if verify.IsDCPDir(path) {
					in, fs, err := validateDCP(path)
					if err != nil {
						return err
					}
					inputs, findings = append(inputs, in.Input), append(findings, fs...)
					continue
				}
				// A directory of variants holds several checkpoints: each is
				// validated on its own, unless --variant names one. With no
				// plain one, a manifest is of one of them: --variant says which.
				scope := variantScope{noPlain: recorded == nil, others: true}
				first := len(findings)
				taken, err := eachVariant(ctx, cmd, path, scope, func(c *checkpoint.Checkpoint) error {
					inputs = append(inputs, verify.DescribeInput(c, ""))
					fs, err := verify.Validate(ctx, c)
					if err == nil {
						err = checkData(ctx, cmd, c, recorded, &fs)
					}
					if err == nil {
						err = c.Unchanged()
					}
					findings = append(findings, fs...)
					return changedFirst(err, c)
				})
				if err != nil {
					return err
				}
				if taken > 1 {
					findings = append(findings[:first], withoutVariantsNotes(findings[first:])...)
				}
			}
			rep, err := newReport(cmd, "validate", inputs, findings)
			if err != nil {
				return err
			}
			return emit(cmd, rep, report.Options{})
		},
	}
}

// checkData runs the checks that read every byte: --hashes and --manifest.
func checkData(ctx context.Context, cmd *cli.Command, c *checkpoint.Checkpoint, recorded *manifest.Manifest, findings *[]verify.Finding) error {
	if cmd.Bool("hashes") {
		fs, _, _, err := checkHashes(ctx, cmd, c, partition.Partition{})
		if err != nil {
			return err
		}
		*findings = append(*findings, fs...)
	}
	if recorded != nil {
		got, err := buildManifest(ctx, cmd, c)
		if err != nil {
			return err
		}
		*findings = append(*findings, manifest.Compare(recorded, got, c.Source.Path)...)
	}
	return nil
}

// validateHashesPart is validate --hashes --partition I/N: the validation
// findings (in partition 0's report only) and the hashes of this
// partition's share of the files, in a report for merge.
func validateHashesPart(ctx context.Context, cmd *cli.Command, part partition.Partition) error {
	c, err := open(ctx, cmd.Args().First(), openOptions(cmd))
	if err != nil {
		return err
	}
	defer c.Close()
	structural, err := verify.Validate(ctx, c)
	if err != nil {
		return err
	}
	hashes, all, covered, err := checkHashes(ctx, cmd, c, part)
	if err != nil {
		return changedFirst(err, c)
	}
	if err := c.Unchanged(); err != nil {
		return err
	}
	settings, err := judgementSettings(cmd)
	if err != nil {
		return err
	}
	igs, err := ignores(cmd)
	if err != nil {
		return err
	}
	structural, ignoredS := verify.ApplyIgnores(structural, igs)
	hashes, ignoredH := verify.ApplyIgnores(hashes, igs)
	rep := manifest.NewHashesReport(manifest.HashesPart{FailOn: failOn(cmd), Inputs: []verify.Input{verify.DescribeInput(c, "")},
		Structural: structural, Hashes: hashes, Partition: part, Covered: covered, Items: len(all), Fingerprint: manifest.FilesFingerprint(c, all, settings)})
	rep.Summary.Ignored = ignoredH
	if part.Index == 0 {
		rep.Summary.Ignored += ignoredS
	}
	return emit(cmd, rep, report.Options{})
}

// validateDCP validates a torch.distributed checkpoint step directory (see
// verify.ValidateDCP); its input counts the model's tensors.
func validateDCP(path string) (dcpInput, []verify.Finding, error) {
	step, fs, err := verify.ValidateDCP(path)
	if err != nil {
		return dcpInput{}, nil, err
	}
	in := verify.Input{Path: path, Index: filepath.Join(path, torchsave.DCPMetadataName), Files: append([]string{}, step.Files...)}
	if step.Metadata != nil {
		for _, t := range step.Metadata.Tensors {
			if t.Part == torchsave.DCPModel {
				in.Tensors++
			}
		}
	}
	return dcpInput{in, step}, fs, nil
}

// A dcpInput is a DCP step's report input and what was read of it.
type dcpInput struct {
	verify.Input
	step *verify.DCPStep
}
