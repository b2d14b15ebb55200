// Command benchrun times whole ckptcheck commands on generated checkpoints,
// as `make bench` runs it. Each scenario writes its files to a temporary
// folder, times its commands and removes the folder.
//
// By default each command runs once to warm the page cache, then several
// times, and the median wall time is reported with the ratio to each named
// baseline (dd, cmp, cat, numpy, Python json, nlpodyssey/safetensors)
// measured in the same run.
//
// With -base REV (make bench BASE=REV) or -base-bin PATH, each ckptcheck
// command is instead timed with both binaries: one warm-up each, then old
// and new alternately, 10 runs each by default, so that the machine's drift
// falls on both alike; medians, new/old and peak RSS are printed. A command
// the base binary rejects (exit 2, e.g. a flag it does not have) is timed
// with the new binary only. Baselines are not run.
//
// With -keep DIR (make bench KEEP=DIR) the scenarios write their files
// under DIR/<scenario ID> and leave them there, for profiling a command by
// hand; files already there are written again.
//
// Usage:
//
//	go -C tools run ./benchrun -bin ../bin/ckptcheck [-runs N] [-only ID,ID] [-small] [-keep DIR]
//	go -C tools run ./benchrun -bin ../bin/ckptcheck -base HEAD~3 [-runs N] [-only ID]
//	go -C tools run ./benchrun -bin ../bin/ckptcheck -base-bin /tmp/ckptcheck-old
//	benchrun nlp-validate DIR    (a baseline: parse DIR's shards with nlpodyssey/safetensors)
//	benchrun nlp-diff A B        (a baseline: diff two folders' keys, shapes, dtypes with it)
//
// Scenarios (for -only, which matches any part of an ID): validate-moe,
// diff-moe, values, values-finetune-bf16, values-finetune-f32,
// values-finetune-f16, values-quant-fp8block, values-quant-gptq.
package main

import (
	"cmp"
	_ "embed"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	nlp "github.com/nlpodyssey/safetensors"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
)

//go:embed diff_keys.py
var diffKeysPy []byte

//go:embed compare_f32.py
var compareF32Py []byte

type options struct {
	bin     string
	base    string // a git revision to build, or ""
	baseBin string // the base binary, or ""
	runs    int    // 0: the default
	only    []string
	small   bool
	keep    string // the folder to write the files in and leave them, or ""
}

func main() {
	if len(os.Args) > 2 && os.Args[1] == "nlp-validate" {
		if _, err := nlpValidate(os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, "nlp-validate:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "serve" {
		if err := serve(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "serve:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) > 3 && os.Args[1] == "nlp-diff" {
		if err := nlpDiff(os.Args[2], os.Args[3]); err != nil {
			fmt.Fprintln(os.Stderr, "nlp-diff:", err)
			os.Exit(1)
		}
		return
	}
	var o options
	var only string
	flag.StringVar(&o.bin, "bin", "../bin/ckptcheck", "the ckptcheck binary to time (the new one, with a base)")
	flag.StringVar(&o.base, "base", "", "a git revision to build and time against -bin, run for run, instead of the baselines")
	flag.StringVar(&o.baseBin, "base-bin", "", "an already built ckptcheck to time against -bin, run for run, instead of the baselines")
	flag.IntVar(&o.runs, "runs", 0, "timed runs per command after one warm-up (default 7, 3 when a run takes over 3 s; with a base, 10 of each binary)")
	flag.StringVar(&only, "only", "", "run only the scenarios whose ID contains one of these comma-separated words")
	flag.BoolVar(&o.small, "small", false, "write the value scenarios' files for a 7.6 MB model: a check that the runner works, not a measurement")
	flag.StringVar(&o.keep, "keep", "", "write the scenarios' files under this folder and leave them there (for profiling), instead of a temporary folder")
	flag.Parse()
	if flag.NArg() > 0 || o.runs < 0 || (o.base != "" && o.baseBin != "") {
		fmt.Fprintln(os.Stderr, "usage: benchrun [-bin PATH] [-base REV | -base-bin PATH] [-runs N] [-only ID,ID] [-small] [-keep DIR]")
		os.Exit(2)
	}
	for w := range strings.SplitSeq(only, ",") {
		if w = strings.TrimSpace(w); w != "" {
			o.only = append(o.only, w)
		}
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "benchrun:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	bin, err := filepath.Abs(o.bin)
	if err != nil {
		return err
	}
	if _, err := os.Stat(bin); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	scratch, err := scratchDir(o.keep)
	if err != nil {
		return err
	}
	tempDir = scratch
	if o.keep == "" {
		defer os.RemoveAll(scratch)
		// Interrupted, or output to a closed pipe (| head), remove the
		// gigabytes written so far.
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGPIPE)
		go func() {
			<-sigs
			os.RemoveAll(scratch)
			os.Exit(130)
		}()
	}

	versus := o.base != "" || o.baseBin != ""
	e := env{bin: bin, self: self, dense: fixture.Qwen3Dense06B, denseName: "Qwen3-0.6B",
		diffKeys: filepath.Join(scratch, "diff_keys.py"), compareF32: filepath.Join(scratch, "compare_f32.py")}
	if o.small {
		e.dense, e.denseName = smallDense, "small Qwen3"
	}
	if err := os.WriteFile(e.diffKeys, diffKeysPy, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(e.compareF32, compareF32Py, 0o644); err != nil {
		return err
	}
	if !versus {
		// The numpy baseline needs numpy; Debian's python3-numpy provides it.
		for _, py := range []string{"python3", "/usr/bin/python3"} {
			if exec.Command(py, "-c", "import numpy").Run() == nil {
				e.numpy = py
				break
			}
		}
	}
	var chosen []scenario
	all := append(allScenarios(e), partitionScenarios(e)...)
	for _, sc := range all {
		if len(o.only) == 0 || slices.ContainsFunc(o.only, func(w string) bool { return strings.Contains(sc.id, w) }) {
			chosen = append(chosen, sc)
		}
	}
	if len(chosen) == 0 {
		ids := make([]string, len(all))
		for i, sc := range all {
			ids[i] = sc.id
		}
		return fmt.Errorf("-only %s: no such scenario; there are %s", strings.Join(o.only, ","), strings.Join(ids, ", "))
	}

	timeScenario := func(sc scenario, dir string) error {
		return baselineScenario(sc, dir, bin, self, cmp.Or(o.runs, 7), o.runs == 0)
	}
	if versus {
		baseBin, baseDesc := o.baseBin, o.baseBin
		if o.base != "" {
			fmt.Printf("building the base, %s ...\n", o.base)
			if baseBin, baseDesc, err = buildBase(o.base, scratch); err != nil {
				return err
			}
		} else if baseBin, err = filepath.Abs(baseBin); err != nil {
			return err
		} else if _, err := os.Stat(baseBin); err != nil {
			return err
		}
		runs := cmp.Or(o.runs, 10)
		fmt.Printf("old: %s\nnew: %s\n%d runs of each after a warm-up of each, alternating old, new.\n"+
			"new/old is the ratio of the medians (below 1: new is faster); pairs q1-q3, the middle\n"+
			"half of the ratios of each old run and the new run after it.\n", baseDesc, o.bin, runs)
		timeScenario = func(sc scenario, dir string) error { return compareScenario(sc, dir, bin, baseBin, runs) }
	}
	for _, sc := range chosen {
		dir := filepath.Join(scratch, sc.id)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if err := sc.setup(dir); err != nil {
			if sc.teardown != nil {
				sc.teardown()
			}
			return fmt.Errorf("%s: setup: %w", sc.id, err)
		}
		err := timeScenario(sc, dir)
		if sc.teardown != nil {
			sc.teardown()
		}
		if o.keep == "" {
			os.RemoveAll(dir)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", sc.id, err)
		}
	}
	return nil
}

// scratchDir is the folder the scenarios write in: keep (made if need be,
// as an absolute path, since commands run elsewhere), or a new temporary one.
func scratchDir(keep string) (string, error) {
	if keep == "" {
		return os.MkdirTemp("", "ckptcheck-bench-")
	}
	if err := os.MkdirAll(keep, 0o755); err != nil {
		return "", err
	}
	return filepath.Abs(keep)
}

// baselineScenario times sc's commands and baselines and prints their
// medians and ratios.
func baselineScenario(sc scenario, dir, bin, self string, runs int, shrink bool) error {
	fmt.Printf("\n== %s: %s\n", sc.id, sc.title)
	ours, baselines := sc.ours(dir), sc.baselines(dir)
	all := append(ours, baselines...)
	results := make([]result, len(all))
	for i, c := range all {
		var err error
		if results[i], err = measure(c, runs, shrink); err != nil {
			return err
		}
	}
	name := func(c []string) string { return describe(c, dir, bin, "ckptcheck", self, "baseline") }
	fmt.Printf("  %9s %9s %4s %9s  %s\n", "median ms", "cpu ms", "runs", "peak RSS", "command")
	for i, c := range all {
		rss, note := "", ""
		if i < len(ours) {
			rss = mib(results[i].maxRSS)
			if results[i].exit != 0 {
				note = fmt.Sprintf("   (exit %d)", results[i].exit)
			}
		}
		fmt.Printf("  %9.1f %9.1f %4d %9s  %s%s\n", ms(results[i].median), ms(results[i].cpu), results[i].runs, rss, name(c), note)
	}
	if sc.ratios != "" {
		fmt.Println("  ratios (" + sc.ratios + "):")
	} else if sc.floor {
		fmt.Println("  ratios (ckptcheck time / baseline time; 1 is the speed of reading the files, above 1 slower):")
	} else {
		fmt.Println("  ratios (baseline time / ckptcheck time; above 1, ckptcheck is faster):")
	}
	for i, c := range ours {
		for j, b := range baselines {
			if sc.pairs != nil && !sc.pairs(i, j) {
				continue
			}
			r := float64(results[len(ours)+j].median) / float64(results[i].median)
			rc := float64(results[len(ours)+j].cpu) / float64(results[i].cpu)
			if sc.floor {
				r, rc = 1/r, 1/rc
			}
			fmt.Printf("    %-48s vs %-48s %6.2f   (cpu time %.2f)\n", short(name(c)), short(name(b)), r, rc)
		}
	}
	if sc.report != nil {
		n := make([]int, len(results))
		for i, r := range results {
			n[i] = r.runs
		}
		sc.report(n)
	}
	return nil
}

// compareScenario times sc's ckptcheck commands with the base binary and
// bin alternately and prints a table of them.
func compareScenario(sc scenario, dir, bin, baseBin string, runs int) error {
	fmt.Printf("\n== %s: %s\n", sc.id, sc.title)
	ours := sc.ours(dir)
	rows := make([]comparison, len(ours))
	for i, c := range ours {
		old := append([]string{baseBin}, c[1:]...)
		var err error
		if rows[i], err = compare(old, c, runs); err != nil {
			return err
		}
	}
	fmt.Printf("  %9s %9s %7s %11s %9s %9s  %s\n", "old ms", "new ms", "new/old", "pairs q1-q3", "old RSS", "new RSS", "command")
	for i, c := range ours {
		r, name := rows[i], describe(c[1:], dir)
		if r.skipped != "" {
			fmt.Printf("  %9s %9.1f %7s %11s %9s %9s  %s   (skipped for the base: %s)\n",
				"-", ms(r.new.median), "-", "-", "-", mib(r.new.maxRSS), name, r.skipped)
			continue
		}
		note := ""
		if r.old.exit != r.new.exit {
			note = fmt.Sprintf("   (exit old %d, new %d)", r.old.exit, r.new.exit)
		}
		n := len(r.pairs)
		fmt.Printf("  %9.1f %9.1f %7.2f %11s %9s %9s  %s%s\n", ms(r.old.median), ms(r.new.median),
			float64(r.new.median)/float64(r.old.median), fmt.Sprintf("%.2f-%.2f", r.pairs[n/4], r.pairs[3*n/4]),
			mib(r.old.maxRSS), mib(r.new.maxRSS), name, note)
	}
	return nil
}

// describe is c as printed: the scratch folder left out of paths, and
// each pair of replacements (a path, its name) made.
func describe(c []string, dir string, replace ...string) string {
	s := strings.Join(c, " ")
	for i := 0; i+1 < len(replace); i += 2 {
		s = strings.ReplaceAll(s, replace[i], replace[i+1])
	}
	return strings.ReplaceAll(s, dir+string(filepath.Separator), "")
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func mib(b int64) string {
	if b == 0 {
		return "?"
	}
	return fmt.Sprintf("%d MiB", b>>20)
}

// short is a command's name cut to 48 bytes for the ratios, without the
// files' common extension.
func short(s string) string {
	s = strings.ReplaceAll(s, ".safetensors", "")
	if len(s) > 48 {
		return s[:45] + "..."
	}
	return s
}

// nlpValidate is the baseline for validate: nlpodyssey/safetensors needs the
// whole file as a byte slice, so each shard is mapped, which touches only the
// header's pages.
func nlpValidate(dir string) (map[string]*nlp.TensorInfo, error) {
	shards, err := filepath.Glob(filepath.Join(dir, "*.safetensors"))
	if err != nil {
		return nil, err
	}
	all := make(map[string]*nlp.TensorInfo)
	for _, p := range shards {
		f, err := os.Open(p)
		if err != nil {
			return nil, err
		}
		st, err := f.Stat()
		if err != nil {
			return nil, err
		}
		data, err := syscall.Mmap(int(f.Fd()), 0, int(st.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
		if err != nil {
			return nil, err
		}
		_, meta, err := nlp.ReadMetadata(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		maps.Copy(all, meta.Tensors())
		syscall.Munmap(data)
		f.Close()
	}
	fmt.Println(len(all), "tensors")
	return all, nil
}

// nlpDiff is the Go baseline for a header-only diff: nlpodyssey's parse of
// both folders, then key sets, shapes and dtypes compared.
func nlpDiff(a, b string) error {
	pub, err := nlpValidate(a)
	if err != nil {
		return err
	}
	exp, err := nlpValidate(b)
	if err != nil {
		return err
	}
	var missing, unexpected, shapes, dtypes int
	for name, p := range pub {
		e, ok := exp[name]
		switch {
		case !ok:
			missing++
		case !slices.Equal(p.Shape, e.Shape):
			shapes++
		}
		if ok && p.DType != e.DType {
			dtypes++
		}
	}
	for name := range exp {
		if _, ok := pub[name]; !ok {
			unexpected++
		}
	}
	fmt.Println(missing, "missing,", unexpected, "unexpected,", shapes, "shapes,", dtypes, "dtypes")
	return nil
}
