package main

import (
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/urfave/cli/v3"

	"github.com/ckptcheck/ckptcheck/checkpoint"
	"github.com/ckptcheck/ckptcheck/report"
	"github.com/ckptcheck/ckptcheck/verify"
)

var loraFlag = &cli.StringFlag{Name: "lora", Usage: "prove EXPORTED is PUBLISHED with the PEFT LoRA adapter at `ADAPTER` merged in (base + scale·B·A on every target, the base elsewhere): diff --lora ADAPTER BASE MERGED; reads all the data"}

// runLoRADiff is diff --lora ADAPTER BASE MERGED: the structural diff of
// base and merge, the adapter's checks against the base, and the merge
// proof, in one report with the adapter as a third input.
func runLoRADiff(ctx context.Context, cmd *cli.Command, opt verify.DiffOptions) error {
	if cmd.Bool("values") || cmd.String("explain") != "" {
		return usageError("--lora is its own value check: it does not go with --values or --explain")
	}
	part, err := partitionOf(cmd)
	if err != nil {
		return err
	}
	igs, err := ignores(cmd)
	if err != nil {
		return err
	}
	paths := append([]string{cmd.String("lora")}, cmd.Args().Slice()...)
	var cks [3]*checkpoint.Checkpoint
	var errs [3]error
	var wg sync.WaitGroup
	for i, path := range paths {
		wg.Go(func() {
			o := openOptions(cmd)
			o.AnyVariant = true
			cks[i], errs[i] = open(ctx, path, o)
		})
	}
	wg.Wait()
	for _, c := range cks {
		if c != nil {
			defer c.Close()
		}
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	ad, base, merged := cks[0], cks[1], cks[2]
	d, err := verify.Diff(ctx, base, merged, opt)
	if err != nil {
		return err
	}
	fingerprint := ""
	if part.Count > 0 {
		settings, err := judgementSettings(cmd)
		if err != nil {
			return err
		}
		// The adapter's path is not the adapter: LoRAFingerprint covers its files.
		settings = slices.DeleteFunc(settings, func(s string) bool { return strings.HasPrefix(s, "lora=") })
		fingerprint = d.LoRAFingerprint(ad, 0, settings)
	}
	lopt := verify.LoRAOptions{Partition: part}
	if base.IsRemote() || merged.IsRemote() {
		lopt.ReadAhead = remoteReadAhead
	}
	bar := newProgress(cmd, d.ValueBytes())
	if bar != nil {
		lopt.Progress = bar.update
	}
	lrep, err := d.CompareLoRA(ctx, ad, lopt)
	bar.finish()
	if err != nil {
		return changedFirst(err, cks[:]...)
	}
	for _, c := range cks {
		if err := c.Unchanged(); err != nil {
			return err
		}
	}
	inputs := []verify.Input{verify.DescribeInput(base, verify.Published), verify.DescribeInput(merged, verify.Exported), verify.DescribeInput(ad, verify.SideAdapter)}
	inputs[0].Adapter, inputs[1].Adapter = d.Published.View.Adapter, d.Exported.View.Adapter
	rep := verify.NewLoRAReport(verify.LoRAReportInput{FailOn: failOn(cmd), Inputs: inputs, Comparison: d, LoRA: lrep,
		Partition: part, Fingerprint: fingerprint, Ignores: igs})
	if err := writeHTML(cmd, rep); err != nil {
		return err
	}
	return emit(cmd, rep, report.Options{})
}

// runValidateBase is validate --base BASE ADAPTER...: each adapter
// validated, then checked against the base.
func runValidateBase(ctx context.Context, cmd *cli.Command) error {
	base, err := open(ctx, cmd.String("base"), openOptions(cmd))
	if err != nil {
		return err
	}
	defer base.Close()
	inputs := []verify.Input{verify.DescribeInput(base, verify.Published)}
	var findings []verify.Finding
	for _, path := range cmd.Args().Slice() {
		c, err := open(ctx, path, openOptions(cmd))
		if err != nil {
			return err
		}
		inputs = append(inputs, verify.DescribeInput(c, verify.SideAdapter))
		fs, err := verify.Validate(ctx, c)
		if err == nil {
			var more []verify.Finding
			more, err = verify.CheckAdapter(base, c)
			fs = append(fs, more...)
		}
		findings = append(findings, fs...)
		c.Close()
		if err != nil {
			return err
		}
	}
	rep, err := newReport(cmd, "validate", inputs, findings)
	if err != nil {
		return err
	}
	return emit(cmd, rep, report.Options{})
}

// adapterBesideBase adds, when diff meets a PEFT adapter as the export,
// the adapter's checks against the published side, and says how to check
// the merge.
func adapterBesideBase(base, exp *checkpoint.Checkpoint, d *verify.Comparison) error {
	i := -1
	for k, f := range d.Findings {
		if f.Code == verify.CodeLoRAAdapter && f.Side == verify.Exported {
			i = k
		}
	}
	if i < 0 {
		return nil
	}
	d.Findings[i].Message += "; to check it against this base run ckptcheck validate --base PUBLISHED ADAPTER, and to check a merge ckptcheck diff --lora ADAPTER PUBLISHED MERGED"
	fs, err := verify.CheckAdapter(base, exp)
	if err != nil {
		return err
	}
	d.Findings = append(d.Findings, fs...)
	return nil
}
