package main

import (
	"context"
	"errors"
	"io/fs"
	"os"

	"github.com/urfave/cli/v3"

	"github.com/ckptcheck/ckptcheck/cmd/ckptcheck/internal/config"
	"github.com/ckptcheck/ckptcheck/verify"
)

// configFlag names the configuration file; without it, .ckptcheck.yaml in
// the working directory is read when there is one.
var configFlag = &cli.StringFlag{
	Name:      "config",
	Usage:     "read flag defaults and a baseline of accepted findings from `FILE` (default: " + config.FileName + " in the working directory, when present)",
	TakesFile: true,
}

// noConfigFlag ignores .ckptcheck.yaml: a script or a library calling
// ckptcheck gets the same verdict in any working directory.
var noConfigFlag = &cli.BoolFlag{
	Name:  "no-config",
	Usage: "ignore " + config.FileName + " in the working directory (a script's run does not depend on where it runs)",
}

// baselineKey is where applyConfig leaves the baseline for emit.
const baselineKey = "ckptcheck.baseline"

// applyConfig runs before every command: it reads the configuration file,
// sets the flags the command line left unset from it, and keeps its
// baseline for emit.
func applyConfig(_ context.Context, cmd *cli.Command) (context.Context, error) {
	path := cmd.String("config")
	if cmd.Bool("no-config") {
		if path != "" {
			return nil, usageError("--config and --no-config contradict each other")
		}
		return nil, nil
	}
	if path == "" {
		if _, err := os.Stat(config.FileName); errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		path = config.FileName
	}
	f, err := config.Load(path, schemaOf(cmd.Root()))
	if err != nil {
		return nil, err
	}
	has := func(name string) bool {
		for _, fl := range cmd.Flags {
			for _, n := range fl.Names() {
				if n == name {
					return true
				}
			}
		}
		return false
	}
	for name, vals := range f.Defaults(cmd.Name, has) {
		if cmd.IsSet(name) {
			continue // the command line wins
		}
		for _, v := range vals {
			if err := cmd.Set(name, v); err != nil {
				return nil, usageError("%s: --%s %q: %v", path, name, v, err)
			}
		}
	}
	if cmd.Metadata == nil {
		cmd.Metadata = map[string]any{}
	}
	cmd.Metadata[baselineKey] = &f.Baseline
	return nil, nil
}

// baselineOf is the baseline applyConfig read for the command, or nil.
func baselineOf(cmd *cli.Command) *verify.Baseline {
	b, _ := cmd.Metadata[baselineKey].(*verify.Baseline)
	return b
}

// schemaOf lists every command's flags for the configuration file's strict
// decoding.
func schemaOf(root *cli.Command) config.Schema {
	s := make(config.Schema)
	for _, c := range root.Commands {
		flags := make(map[string]bool)
		for _, f := range c.Flags {
			_, repeatable := f.(*cli.StringSliceFlag)
			for _, n := range f.Names() {
				if len(n) > 1 && n != "help" && n != "config" && n != "no-config" {
					flags[n] = repeatable
				}
			}
		}
		s[c.Name] = flags
	}
	return s
}

// pristine holds copies of the flags several commands share (package-level
// values), taken before any run. A flag remembers that it was set (IsSet)
// from one run to the next in one process (the tests run many), and the
// configuration file must see only this run's command line: newApp gives
// every command fresh copies.
var pristine = map[cli.Flag]cli.Flag{}

func init() {
	for _, f := range []cli.Flag{formatFlag, failOnFlag, verboseFlag, configFlag, noConfigFlag} {
		pristine[f] = copyFlag(f)
	}
}

// copyFlag copies a flag's definition; its run state is copied too, so
// only a pristine flag gives a fresh one.
func copyFlag(f cli.Flag) cli.Flag {
	switch v := f.(type) {
	case *cli.StringFlag:
		c := *v
		return &c
	case *cli.BoolFlag:
		c := *v
		return &c
	}
	return f
}

// freshFlags replaces the shared flags in a command's list by fresh copies.
func freshFlags(flags []cli.Flag) []cli.Flag {
	for i, f := range flags {
		if p, ok := pristine[f]; ok {
			flags[i] = copyFlag(p)
		}
	}
	return flags
}
