package main

import (
	"context"
	"errors"
	"slices"

	"github.com/urfave/cli/v3"

	"github.com/ckptcheck/ckptcheck/checkpoint"
	"github.com/ckptcheck/ckptcheck/verify"
)

// variantScope says which checkpoints of a folder holding several a
// command takes when --variant names none.
type variantScope struct {
	// noPlain: each checkpoint of a folder of several and no plain one
	// (GGUF files of several quantizations), rather than the usage error
	// asking for --variant (checkpoint.VariantsError).
	noPlain bool
	// others: the folder's other variants (model.fp16.safetensors beside
	// model.safetensors) after the plain one.
	others bool
}

// eachVariant opens path and calls fn with it, then closes it; a folder of
// several checkpoints is each that scope takes, in turn, like a linter
// given several packages. --variant names one. It returns how many it
// took; the first error stops the run.
func eachVariant(ctx context.Context, cmd *cli.Command, path string, scope variantScope, fn func(*checkpoint.Checkpoint) error) (int, error) {
	pick := cmd.String("variant") != "" // not IsSet: the flag is shared by every command, and tests run many in one process
	variants := []string{cmd.String("variant")}
	taken := 0
	for i := 0; i < len(variants); i++ {
		opt := openOptions(cmd)
		opt.Variant = variants[i]
		c, err := open(ctx, path, opt)
		var several *checkpoint.VariantsError
		if i == 0 && !pick && scope.noPlain && errors.As(err, &several) {
			variants = append(variants, several.Variants...)
			continue
		}
		if err != nil {
			return 0, err
		}
		if i == 0 && !pick && scope.others {
			variants = append(variants, c.Variants...)
		}
		err = fn(c)
		c.Close()
		if err != nil {
			return 0, err
		}
		taken++
	}
	return taken, nil
}

// withoutVariantsNotes drops the variants findings (each checkpoint's note
// that the folder holds others, not checked) of a run that took every
// variant: the inputs list them all.
func withoutVariantsNotes(findings []verify.Finding) []verify.Finding {
	return slices.DeleteFunc(findings, func(f verify.Finding) bool { return f.Code == verify.CodeVariants })
}
