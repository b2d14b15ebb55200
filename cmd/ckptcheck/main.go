package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/urfave/cli/v3"

	"github.com/ckptcheck/ckptcheck/checkpoint"
	"github.com/ckptcheck/ckptcheck/report"
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
	setMemoryLimit(os.Getenv, "/sys/fs/cgroup")
	ctx, cancel := context.WithCancel(context.Background())
	// The first Ctrl-C stops the work (every phase checks ctx); a second
	// one exits at once.
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sig
		cancel()
		<-sig
		fmt.Fprintln(os.Stderr, "ckptcheck: interrupted")
		os.Exit(exitTrouble)
	}()
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
		if ctx.Err() != nil {
			err = errors.New("interrupted")
		}
		fmt.Fprintln(stderr, "ckptcheck: "+err.Error())
		return exitTrouble
	}
}

// errFindings reports that the report was printed and holds findings at or
// above the threshold: exit status 1, nothing more to say.
var errFindings = errors.New("findings at or above --fail-on")

func init() {
	// --version only: -v is --verbose.
	cli.VersionFlag = &cli.BoolFlag{Name: "version", Usage: "print the version and exit", HideDefault: true, Local: true}
	cli.VersionPrinter = func(cmd *cli.Command) {
		fmt.Fprintf(cmd.Root().Writer, "ckptcheck %s\n", cmd.Root().Version)
	}
}

func newApp(stdout, stderr io.Writer) *cli.Command {
	app := &cli.Command{
		Name:      "ckptcheck",
		Usage:     "verify Hugging Face safetensors checkpoints",
		Version:   version(),
		Writer:    stdout,
		ErrWriter: stderr,
		// -vq is -v -q.
		UseShortOptionHandling: true,
		// Repeatable flags take each value whole: an adapter chain or a
		// regexp holds commas.
		DisableSliceFlagSeparator: true,
		// Errors are turned into exit statuses by run, not by the library.
		ExitErrHandler: func(context.Context, *cli.Command, error) {},
		OnUsageError: func(_ context.Context, _ *cli.Command, err error, _ bool) error {
			return usageError("%s", flagNames(err.Error()))
		},
		Commands: []*cli.Command{diffCommand(), validateCommand(), inspectCommand(), manifestCommand(), adaptersCommand(), codesCommand(), mergeCommand()},
	}
	// Without a command, or with an unknown one, say so and exit 2.
	app.Action = func(ctx context.Context, cmd *cli.Command) error {
		if cmd.NArg() == 0 {
			cli.ShowRootCommandHelp(cmd)
			return usageError("no command given")
		}
		name := cmd.Args().First()
		msg := fmt.Sprintf("unknown command %q", name)
		if s := suggest(name, cmd.Commands); s != "" {
			msg += fmt.Sprintf("; did you mean %q?", s)
		}
		return usageError("%s (commands: diff, validate, inspect, manifest, adapters, codes, merge)", msg)
	}
	for _, c := range app.Commands {
		c.OnUsageError = app.OnUsageError // one line on stderr, not the help page
		c.DisableSliceFlagSeparator = true
		c.Flags = freshFlags(append(c.Flags, configFlag, noConfigFlag))
		c.Before = applyConfig // .ckptcheck.yaml or --config: flag defaults, baseline; --no-config: none
	}
	return app
}

// usageError is a bad command line: exit status 2.
func usageError(format string, args ...any) error {
	return fmt.Errorf(format, args...)
}

// flagRef matches the library's single-dash flag names in its errors.
// Compiled when an error needs it, not at start-up.
var flagRef = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(flag|defined:) -([a-z][a-z-]+)`) })

// flagNames writes flags in errors as users type them: --fail-on.
func flagNames(msg string) string {
	msg = flagRef().ReplaceAllString(msg, "$1 --$2")
	return strings.Replace(msg, "flag provided but not defined:", "unknown flag", 1)
}

// suggest returns the command closest to a mistyped one, or "".
func suggest(name string, cmds []*cli.Command) string {
	best, bestDist := "", 3
	for _, c := range cmds {
		if c.Name == "help" {
			continue
		}
		if d := editDistance(name, c.Name); d < bestDist || (strings.HasPrefix(c.Name, name) && len(name) >= 3) {
			best, bestDist = c.Name, min(d, bestDist)
		}
	}
	return best
}

// editDistance is the Levenshtein distance of two short words.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// versionStamp is the version make dist stamps in (-ldflags -X
// main.versionStamp=...): the VCS state as git describes it, which the go
// command cannot read everywhere (a git worktree, a build with
// -buildvcs=false).
var versionStamp string

// version is the module version and VCS revision the binary was built from.
func version() string {
	info, ok := debug.ReadBuildInfo()
	if versionStamp != "" {
		if ok {
			return versionStamp + " " + info.GoVersion
		}
		return versionStamp
	}
	if !ok {
		return "(unknown)"
	}
	v := info.Main.Version
	var rev, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = "+dirty"
			}
		}
	}
	if rev != "" {
		v += " (" + rev[:min(12, len(rev))] + modified + ")"
	}
	return v + " " + info.GoVersion
}

var formatFlag = &cli.StringFlag{
	Name:  "format",
	Value: "text",
	Usage: "output `FORMAT`: " + strings.Join(report.Formats(), ", "),
	Validator: func(s string) error {
		if slices.Contains(report.Formats(), s) {
			return nil
		}
		return fmt.Errorf("--format must be one of %s, not %q", strings.Join(report.Formats(), ", "), s)
	},
}

// listFormatFlag is --format for the listings that are not reports
// (adapters, codes).
var listFormatFlag = &cli.StringFlag{
	Name:  "format",
	Value: "text",
	Usage: "output `FORMAT`: text or json",
	Validator: func(s string) error {
		if s == "text" || s == "json" {
			return nil
		}
		return fmt.Errorf("--format must be text or json, not %q", s)
	},
}

var failOnFlag = &cli.StringFlag{
	Name:  "fail-on",
	Value: "error",
	Usage: "exit 1 when a finding is at or above `SEVERITY`: error, warning, info or never",
	Validator: func(s string) error {
		_, err := verify.ParseSeverity(s)
		return err
	},
}

var verboseFlag = &cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "list every finding instead of collapsing repeats"}

var ignoreFlag = &cli.StringSliceFlag{Name: "ignore", Usage: "silence a finding code, for every key or only keys matching a glob: `CODE[=GLOB]` (repeatable; the report counts what was ignored)"}

var variantFlag = &cli.StringFlag{Name: "variant", Usage: "read the `VARIANT` files of a directory holding several (model.fp16.safetensors: fp16; model-Q8_0.gguf: Q8_0); default the plain model.safetensors"}

// ignores parses --ignore.
func ignores(cmd *cli.Command) ([]verify.Ignore, error) {
	var out []verify.Ignore
	for _, spec := range cmd.StringSlice("ignore") {
		ig, err := verify.ParseIgnore(spec)
		if err != nil {
			return nil, usageError("%v", err)
		}
		out = append(out, ig)
	}
	return out, nil
}

// newReport builds a command's report with --ignore and --fail-on applied.
func newReport(cmd *cli.Command, name string, inputs []verify.Input, findings []verify.Finding) (*verify.Report, error) {
	igs, err := ignores(cmd)
	if err != nil {
		return nil, err
	}
	kept, ignored := verify.ApplyIgnores(findings, igs)
	r := verify.NewReport(name, failOn(cmd), inputs, kept)
	r.Summary.Ignored = ignored
	return r, nil
}

// emit prints a report in the chosen format and turns it into an exit status.
func emit(cmd *cli.Command, r *verify.Report, opt report.Options) error {
	opt.Verbose = opt.Verbose || cmd.Bool("verbose")
	if r.Partition == nil {
		// A part's report keeps every finding for merge, which applies
		// the baseline to the merged report.
		baselineOf(cmd).Apply(r)
	}
	opt.Version = version()
	if host, err := os.Hostname(); err == nil {
		opt.Hostname = host
	}
	format := cmd.String("format")
	// GitHub Actions: the markdown summary is appended to the step's.
	if path := os.Getenv("GITHUB_STEP_SUMMARY"); format == "github" && path != "" {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return fmt.Errorf("GITHUB_STEP_SUMMARY: %w", err)
		}
		defer f.Close()
		opt.StepSummary = f
	}
	if err := report.Write(cmd.Root().Writer, format, r, opt); err != nil {
		return err
	}
	if f, ok := opt.StepSummary.(*os.File); ok {
		if err := f.Close(); err != nil {
			return fmt.Errorf("GITHUB_STEP_SUMMARY: %w", err)
		}
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

// testHookAfterOpen, when set by a test, runs after a checkpoint opens.
var testHookAfterOpen func()

// open opens a checkpoint, with the options the command line gives.
func open(ctx context.Context, path string, opt checkpoint.Options) (*checkpoint.Checkpoint, error) {
	c, err := checkpoint.Open(ctx, path, opt)
	if err == nil && testHookAfterOpen != nil {
		testHookAfterOpen()
	}
	return c, explainTokenError(err)
}

// changedFirst is err, unless one of cks changed during the run: a read
// that failed on a file being rewritten says so, not what broke.
func changedFirst(err error, cks ...*checkpoint.Checkpoint) error {
	if err == nil {
		return nil
	}
	for _, c := range cks {
		if uerr := c.Unchanged(); uerr != nil {
			return uerr
		}
	}
	return err
}
