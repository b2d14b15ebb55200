package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"strings"
	"sync"

	"github.com/urfave/cli/v3"

	"github.com/ckptcheck/ckptcheck/adapter"
	"github.com/ckptcheck/ckptcheck/checkpoint"
	"github.com/ckptcheck/ckptcheck/internal/wholefile"
	"github.com/ckptcheck/ckptcheck/report"
	"github.com/ckptcheck/ckptcheck/safetensors"
	"github.com/ckptcheck/ckptcheck/verify"
)

func diffCommand() *cli.Command {
	return &cli.Command{
		Name:      "diff",
		Usage:     "compare an exported checkpoint with the published one it came from",
		ArgsUsage: "PUBLISHED EXPORTED",
		Description: "Validates both sides, maps the exported names onto the published ones with an adapter " +
			"(chosen automatically unless --adapter says), and reports missing and unexpected keys, shape and dtype " +
			"differences. lm_head.weight absent on one side is fine when tie_word_embeddings says it is tied.",
		Flags: append([]cli.Flag{
			formatFlag, failOnFlag, verboseFlag, ignoreFlag, variantFlag,
			&cli.StringSliceFlag{Name: "adapter", Usage: "adapter chain per side, `SIDE=CHAIN` (published= or exported=; a bare CHAIN is the exported side), e.g. exported=torchtitan-hf,compile; auto by default (repeatable)"},
			&cli.StringFlag{Name: "write-adapter", Usage: "write the adapter inferred with --adapter exported=infer (or published=infer) to `FILE`, created fresh (never overwritten), for review and --adapter-file", TakesFile: true},
			&cli.StringSliceFlag{Name: "adapter-file", Usage: "load an adapter from `FILE`, written in the rule language (see ckptcheck adapters); --adapter can name it and auto considers it (repeatable)", TakesFile: true},
			&cli.StringFlag{Name: "explain", Usage: "print how `KEY` (an HF name, or a physical name of either side) maps on each side, instead of the diff"},
			&cli.StringSliceFlag{Name: "strip-prefix", Usage: "remove `PREFIX` from exported names (repeatable, applied in order)"},
			&cli.StringSliceFlag{Name: "rename", Usage: "rewrite exported names with `REGEX=REPLACEMENT`, Go regexp syntax with $1 groups (repeatable)"},
			&cli.StringFlag{Name: "tied", Usage: "override tie_word_embeddings from config.json: `true|false`"},
			&cli.StringFlag{Name: "dtype", Usage: "demand `DTYPE` (bf16, f16, f32, ...) for every floating-point exported tensor; differences become errors"},
			&cli.BoolFlag{Name: "values", Usage: "compare every matched tensor's values element by element (reads all the data)"},
			&cli.FloatFlag{Name: "atol", Usage: "with --values: absolute tolerance `A`, |e - p| <= atol + rtol*|p|"},
			&cli.FloatFlag{Name: "rtol", Usage: "with --values: relative tolerance `R`"},
			&cli.StringFlag{Name: "expect", Value: "equal", Usage: "with --values: `equal` (the published values, within --atol/--rtol) or derived (trained from them: each tensor within relative L2 0.25 and cosine 0.95 of the published one; max_rel_l2 and min_cosine in --policy change the bound)"},
			&cli.StringFlag{Name: "policy", Usage: "with --values: a JSON `FILE` of per-pattern rules, first match wins: {\"rules\":[{\"match\":\"*.mlp.gate.weight\",\"rtol\":1e-2},{\"match\":\"*.expert_bias\",\"skip\":\"why\"}]}", TakesFile: true},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no progress bar"},
			htmlFlag,
			&cli.BoolFlag{Name: "weights-only", Usage: "judge the weights only: not config.json, tokenizer and generation files, nor the export's dtype against its config"},
			&cli.BoolFlag{Name: "require-files", Usage: "make every config, tokenizer, generation or chat-template file the published side has and the export lacks an error (the gate before upload)"},
			partitionFlag,
			loraFlag,
		}, remoteFlags()...),
		Action: runDiff,
	}
}

func runDiff(ctx context.Context, cmd *cli.Command) error {
	if err := needArgs(cmd, 2, 2, "PUBLISHED EXPORTED"); err != nil {
		return err
	}
	opt, err := diffOptions(cmd)
	if err != nil {
		return err
	}
	if cmd.String("lora") != "" {
		return runLoRADiff(ctx, cmd, opt)
	}
	policy, err := valuePolicy(cmd)
	if err != nil {
		return err
	}
	igs, err := ignores(cmd)
	if err != nil {
		return err
	}
	part, err := partitionOf(cmd)
	if err != nil {
		return err
	}
	// Both sides' headers are read at once: on large checkpoints that is
	// most of the work.
	var cks [2]*checkpoint.Checkpoint
	var errs [2]error
	var closers [2]func() // a DCP step's item files
	var wg sync.WaitGroup
	for i, path := range cmd.Args().Slice() {
		wg.Go(func() {
			if verify.IsDCPDir(path) {
				cks[i], closers[i], errs[i] = openDCP(path)
				return
			}
			opt := openOptions(cmd)
			opt.AnyVariant = true
			cks[i], errs[i] = open(ctx, path, opt)
		})
	}
	wg.Wait()
	for _, closeItems := range closers {
		if closeItems != nil {
			defer closeItems()
		}
	}
	for _, c := range cks {
		if c != nil {
			defer c.Close()
		}
	}
	for _, err := range errs {
		if err != nil {
			return err // one line: the first side that could not be read
		}
	}
	d, err := verify.Diff(ctx, cks[0], cks[1], opt)
	if err != nil {
		return err
	}
	if err := adapterBesideBase(cks[0], cks[1], d); err != nil {
		return err
	}
	inputs := []verify.Input{verify.DescribeInput(cks[0], verify.Published), verify.DescribeInput(cks[1], verify.Exported)}
	inputs[0].Adapter, inputs[1].Adapter = d.Published.View.Adapter, d.Exported.View.Adapter
	if d.Inference != nil {
		in := &inputs[1]
		if d.InferredSide == verify.Published {
			in = &inputs[0]
		}
		in.Adapter, in.Inferred = "infer", verify.DescribeInference(d.Inference)
		if err := writeInferred(cmd, d.Inference.Text()); err != nil {
			return err
		}
		if cmd.String("explain") == "inferred" {
			_, err := fmt.Fprint(cmd.Root().Writer, d.Inference.Text())
			return err
		}
	}
	if key := cmd.String("explain"); key != "" {
		if cmd.String("html") != "" {
			return usageError("--html does not go with --explain")
		}
		rep := verify.NewReport("diff", verify.Never, inputs, nil)
		rep.Explanation = d.Explain(key)
		if err := emit(cmd, rep, report.Options{}); err != nil {
			return err
		}
		if !rep.Explanation.Found() {
			return fmt.Errorf("no tensor %q on either side", key)
		}
		return nil
	}
	fingerprint := ""
	if part.Count > 0 {
		// Before the hours of reading: a settings file that cannot be
		// read fails now.
		settings, err := judgementSettings(cmd)
		if err != nil {
			return err
		}
		fingerprint = d.Fingerprint(policy, settings)
	}
	var values *verify.ValueReport
	if cmd.Bool("values") {
		vopt := verify.ValueOptions{Policy: policy, Partition: part}
		if cks[0].IsRemote() || cks[1].IsRemote() {
			vopt.ReadAhead = remoteReadAhead
		}
		bar := newProgress(cmd, d.ValueBytes())
		if bar != nil {
			vopt.Progress = bar.update
		}
		values, err = d.CompareValues(ctx, vopt)
		bar.finish()
		if err != nil {
			return changedFirst(err, cks[:]...)
		}
	}
	for _, c := range cks {
		if err := c.Unchanged(); err != nil {
			return err
		}
	}
	var rep *verify.Report
	if values == nil {
		if rep, err = newReport(cmd, "diff", inputs, d.Findings); err != nil {
			return err
		}
	} else {
		rep = verify.NewValuesReport(verify.ValuesReportInput{FailOn: failOn(cmd), Inputs: inputs, Comparison: d, Values: values,
			Partition: part, Fingerprint: fingerprint, Ignores: igs})
	}
	if err := writeHTML(cmd, rep); err != nil {
		return err
	}
	return emit(cmd, rep, report.Options{})
}

// valuePolicy builds the value policy from --policy, --atol and --rtol;
// the flags override the file's default.
func valuePolicy(cmd *cli.Command) (verify.ValuePolicy, error) {
	var p verify.ValuePolicy
	if file := cmd.String("policy"); file != "" {
		f, err := wholefile.Open(file, policyLimit)
		if err != nil {
			return p, err
		}
		defer f.Close()
		if p, err = verify.ReadPolicy(f); err != nil {
			return p, fmt.Errorf("%s: %v", file, err)
		}
	}
	for _, name := range []string{"atol", "rtol"} {
		if !cmd.IsSet(name) {
			continue
		}
		v := cmd.Float(name)
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return p, usageError("--%s must be a finite number >= 0", name)
		}
		if name == "atol" {
			p.Default.Atol = v
		} else {
			p.Default.Rtol = v
		}
	}
	if !cmd.Bool("values") && (cmd.IsSet("atol") || cmd.IsSet("rtol") || cmd.IsSet("policy") || cmd.IsSet("expect")) {
		return p, usageError("--atol, --rtol, --policy and --expect need --values")
	}
	expect, err := verify.ParseExpect(cmd.String("expect"))
	if err != nil {
		return p, usageError("--%v", err)
	}
	if expect.Derived() && (cmd.IsSet("atol") || cmd.IsSet("rtol")) {
		return p, usageError("--atol and --rtol judge --expect equal; --expect derived judges by the drift bound (max_rel_l2, min_cosine in --policy)")
	}
	p.Expect = expect
	return p, nil
}

func diffOptions(cmd *cli.Command) (verify.DiffOptions, error) {
	var opt verify.DiffOptions
	reg := &adapter.Registry{}
	for _, file := range cmd.StringSlice("adapter-file") {
		b, err := wholefile.ReadFile(file, adapterFileLimit)
		if err != nil {
			return opt, err
		}
		a, err := adapter.Parse(file, string(b))
		if err != nil {
			return opt, usageError("--adapter-file: %v", err)
		}
		reg.Add(a)
	}
	opt.User = reg.User()
	for _, spec := range cmd.StringSlice("adapter") {
		side, chain := &opt.Exported, spec
		if s, c, ok := strings.Cut(spec, "="); ok {
			switch verify.Side(s) {
			case verify.Published:
				side = &opt.Published
			case verify.Exported:
			default:
				return opt, usageError("--adapter %q: side must be published or exported", spec)
			}
			chain = c
		}
		// The last --adapter of a side wins.
		if chain == "auto" {
			side.Fixed, side.Infer = false, false
			continue
		}
		if chain == "infer" {
			side.Infer, side.Fixed = true, false
			continue
		}
		c, err := reg.ParseChain(chain)
		if err != nil {
			return opt, usageError("--adapter: %v", err)
		}
		side.Chain, side.Fixed, side.Infer = c, true, false
	}
	var extra adapter.Chain
	for _, p := range cmd.StringSlice("strip-prefix") {
		extra = append(extra, adapter.StripPrefix(p))
	}
	for _, r := range cmd.StringSlice("rename") {
		a, err := adapter.Rename(r)
		if err != nil {
			return opt, usageError("%v", err)
		}
		extra = append(extra, a)
	}
	opt.Exported.Extra = extra
	if opt.Published.Infer && opt.Exported.Infer {
		return opt, usageError("--adapter published=infer and exported=infer: inference maps one side's names onto the other's HF names; infer one side")
	}
	switch t := cmd.String("tied"); t {
	case "":
	case "true", "false":
		tied := t == "true"
		opt.Tied = &tied
	default:
		return opt, usageError("--tied must be true or false, not %q", t)
	}
	if cmd.Bool("weights-only") && cmd.Bool("require-files") {
		return opt, usageError("--weights-only and --require-files contradict each other")
	}
	opt.WeightsOnly = cmd.Bool("weights-only")
	opt.Files.RequireFiles = cmd.Bool("require-files")
	if name := cmd.String("dtype"); name != "" {
		d, ok := safetensors.LookupDType(name)
		if !ok {
			return opt, usageError("--dtype %q: unknown dtype", name)
		}
		opt.DType = &d
	}
	return opt, nil
}

// writeInferred writes the inferred adapter to --write-adapter's file,
// which must not exist: an input (an adapter file, a checkpoint) is never
// overwritten.
func writeInferred(cmd *cli.Command, text string) error {
	path := cmd.String("write-adapter")
	if path == "" {
		return nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("--write-adapter: %v (the file is created fresh, never overwritten)", err)
	}
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		return fmt.Errorf("--write-adapter %s: %v", path, err)
	}
	return f.Close()
}

// openDCP opens a DCP step directory's model tensors as a checkpoint (see
// verify.DCPCheckpoint).
func openDCP(path string) (*checkpoint.Checkpoint, func(), error) {
	step, _, err := verify.ValidateDCP(path)
	if err != nil {
		return nil, nil, err
	}
	return verify.DCPCheckpoint(step)
}
