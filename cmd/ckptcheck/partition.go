package main

import (
	"fmt"
	"os"
	"slices"
	"strconv"

	"github.com/urfave/cli/v3"

	"github.com/ckptcheck/ckptcheck/partition"
)

var partitionFlag = &cli.StringFlag{
	Name: "partition",
	Usage: "with --values or --lora: do only part `I/N` of the work (0-based), or auto/N with I from the job array " +
		"(SLURM_ARRAY_TASK_ID, JOB_COMPLETION_INDEX, CI_NODE_INDEX); writes a JSON report for ckptcheck merge",
}

// filePartitionFlag is --partition for the commands that hash whole files.
var filePartitionFlag = &cli.StringFlag{
	Name: "partition",
	Usage: "hash only part `I/N` of the files (0-based), or auto/N with I from the job array " +
		"(SLURM_ARRAY_TASK_ID, JOB_COMPLETION_INDEX, CI_NODE_INDEX); ckptcheck merge joins the parts",
}

// presentationFlags change how a report is shown or when the run fails,
// never what it finds: they are left out of the fingerprint. Every other
// flag, including flags added later, is in it.
var presentationFlags = []string{"format", "fail-on", "verbose", "quiet", "partition", "html", "help"}

// partitionOf reads --partition; the zero Partition when it is not given.
// It says on stderr where auto took the index from. A partition's report
// must be JSON, for merge.
func partitionOf(cmd *cli.Command) (partition.Partition, error) {
	spec := cmd.String("partition")
	if spec == "" {
		return partition.Partition{}, nil
	}
	switch {
	case cmd.Name == "diff" && !cmd.Bool("values") && cmd.String("lora") == "":
		return partition.Partition{}, usageError("--partition needs --values or --lora: it splits the value comparison")
	case cmd.Name == "validate" && !cmd.Bool("hashes"):
		return partition.Partition{}, usageError("--partition needs --hashes: it splits the hashing")
	case cmd.Name == "validate" && cmd.String("manifest") != "":
		return partition.Partition{}, usageError("--partition and --manifest do not go together: partition the manifest command instead")
	case cmd.Name == "validate" && cmd.NArg() != 1:
		return partition.Partition{}, usageError("--partition splits one checkpoint: give one PATH")
	case cmd.Name == "diff" && cmd.String("explain") != "":
		return partition.Partition{}, usageError("--partition and --explain do not go together")
	case cmd.Name != "manifest" && cmd.String("format") != "json":
		return partition.Partition{}, usageError("--partition makes a report for ckptcheck merge, which reads JSON: add --format json")
	}
	p, err := partition.ParsePartition(spec, os.Getenv)
	if err != nil {
		return p, usageError("%v", err)
	}
	if p.From != "" && !cmd.Bool("quiet") {
		fmt.Fprintf(cmd.Root().ErrWriter, "ckptcheck: partition %s (from %s)\n", p, p.From)
	}
	return p, nil
}

// judgementSettings lists, for the fingerprint, the tool version and every
// flag given that can change a result (set on the command line or by the
// configuration file), as "name=value" in the order the command declares
// them; a flag naming a file (adapter files, the policy, --config) is the
// digest of its contents, which decide the result, not its path.
func judgementSettings(cmd *cli.Command) ([]string, error) {
	out := []string{"ckptcheck " + cmd.Root().Version}
	for _, f := range cmd.Flags {
		name := f.Names()[0]
		if slices.Contains(presentationFlags, name) || !cmd.IsSet(name) {
			continue
		}
		var values []string
		switch v := cmd.Value(name).(type) {
		case []string:
			values = v
		case string:
			values = []string{v}
		case bool:
			values = []string{strconv.FormatBool(v)}
		case float64:
			values = []string{strconv.FormatFloat(v, 'g', -1, 64)}
		default:
			values = []string{fmt.Sprint(v)}
		}
		for _, v := range values {
			line := name + "=" + strconv.Quote(v)
			if takesFile(f) {
				// The contents, not the path: parts may run where the
				// file is elsewhere.
				sum, err := fileDigest(name, v)
				if err != nil {
					return nil, err
				}
				line = name + "=sha256:" + sum
			}
			out = append(out, line)
		}
	}
	return out, nil
}

// takesFile reports a flag whose values name files.
func takesFile(f cli.Flag) bool {
	switch f := f.(type) {
	case *cli.StringFlag:
		return f.TakesFile
	case *cli.StringSliceFlag:
		return f.TakesFile
	}
	return false
}
