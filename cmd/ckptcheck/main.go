package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"

	"github.com/urfave/cli/v3"

	"github.com/ckptcheck/ckptcheck/verify"
)

// Exit statuses, as diff(1): 0 no finding at or above --fail-on, 1 findings
// at or above it, 2 the tool could not do its job.
const (
	exitOK       = 0
	exitFindings = 1
	exitTrouble  = 2
)

func main() {
	// ckptcheck's heap is headers and bounded buffers, tens of MB even for
	// large MoE checkpoints: collect only as it nears 1 GiB. A collection
	// cycle costs as much as a tenth of a header-only diff.
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(1 << 30)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args, os.Stdout, os.Stderr))
}

// run is main without the process: it returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	app := newApp(stdout, stderr)
	err := app.Run(ctx, args)
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errFindings):
		return exitFindings
	default:
		// Usage errors, unreadable inputs, and the library's own errors
		// (an unknown command is its exit 3) all mean ckptcheck could not
		// do its job.
		fmt.Fprintln(stderr, "ckptcheck: "+err.Error())
		return exitTrouble
	}
}

// errFindings reports that the report was printed and holds findings at or
// above the threshold: exit status 1, nothing more to say.
var errFindings = errors.New("findings at or above --fail-on")

func newApp(stdout, stderr io.Writer) *cli.Command {
	app := &cli.Command{
		Name:      "ckptcheck",
		Usage:     "verify Hugging Face safetensors checkpoints",
		Writer:    stdout,
		ErrWriter: stderr,
		// Errors are turned into exit statuses by run, not by the library.
		ExitErrHandler: func(context.Context, *cli.Command, error) {},
		OnUsageError: func(_ context.Context, _ *cli.Command, err error, _ bool) error {
			return usageError("%v", err)
		},
		Commands: []*cli.Command{diffCommand(), validateCommand(), inspectCommand(), adaptersCommand(), codesCommand()},
	}
	for _, c := range app.Commands {
		c.OnUsageError = app.OnUsageError // one line on stderr, not the help page
	}
	return app
}

// usageError is a bad command line: exit status 2.
func usageError(format string, args ...any) error {
	return fmt.Errorf(format, args...)
}

var formatFlag = &cli.StringFlag{
	Name:  "format",
	Value: "text",
	Usage: "output format: text or json",
	Validator: func(s string) error {
		if s != "text" && s != "json" {
			return fmt.Errorf("--format must be text or json, not %q", s)
		}
		return nil
	},
}

var failOnFlag = &cli.StringFlag{
	Name:  "fail-on",
	Value: "error",
	Usage: "exit 1 when a finding is at or above this severity: error, warning, info or never",
	Validator: func(s string) error {
		_, err := verify.ParseSeverity(s)
		return err
	},
}

var verboseFlag = &cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "list every finding instead of collapsing repeats"}

// emit prints a report in the chosen format and turns it into an exit status.
func emit(cmd *cli.Command, r *verify.Report) error {
	var err error
	if cmd.String("format") == "json" {
		err = r.WriteJSON(cmd.Root().Writer)
	} else {
		err = r.WriteText(cmd.Root().Writer, cmd.Bool("verbose"))
	}
	if err != nil {
		return err
	}
	if !r.OK {
		return errFindings
	}
	return nil
}

func failOn(cmd *cli.Command) verify.Severity {
	sev, _ := verify.ParseSeverity(cmd.String("fail-on")) // checked by its Validator
	return sev
}

func needArgs(cmd *cli.Command, min, max int, names string) error {
	n := cmd.NArg()
	if n < min || (max >= 0 && n > max) {
		return usageError("usage: ckptcheck %s %s", cmd.Name, names)
	}
	return nil
}
