// Command benchrun times whole ckptcheck commands against named baselines on
// generated checkpoints, as `make bench` runs it: each command runs several
// times and the median wall time is reported, with the ratio to each
// baseline measured in the same run.
//
// Usage:
//
//	go run ./internal/benchrun -bin bin/ckptcheck [-runs 7] [-only NAME]
//	benchrun nlp-validate DIR    (a baseline: parse DIR's shards with nlpodyssey/safetensors)
//	benchrun nlp-diff A B        (a baseline: diff two folders' keys, shapes, dtypes with it)
package main

import (
	_ "embed"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	nlp "github.com/nlpodyssey/safetensors"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

//go:embed diff_keys.py
var diffKeysPy []byte

//go:embed compare_f32.py
var compareF32Py []byte

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
	bin := flag.String("bin", "bin/ckptcheck", "the ckptcheck binary to time")
	runs := flag.Int("runs", 7, "runs per command; the median is reported")
	only := flag.String("only", "", "run only scenarios whose name contains this")
	flag.Parse()
	if err := run(*bin, *runs, *only); err != nil {
		fmt.Fprintln(os.Stderr, "benchrun:", err)
		os.Exit(1)
	}
}

type scenario struct {
	name  string
	setup func(dir string) error
	// ours are ckptcheck's commands, timed against each baseline.
	ours, baselines func(dir string) [][]string
	// pairs, if set, says which (ours, baseline) ratios mean something.
	pairs func(our, baseline int) bool
	// report, if set, prints more after the timings, given how many
	// times each command ran (the warm-up run included).
	report func(runs []int)
	// teardown, if set, stops what setup started.
	teardown func()
}

func run(bin string, runs int, only string) error {
	bin, err := filepath.Abs(bin)
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	scratch, err := os.MkdirTemp("", "ckptcheck-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(scratch)

	script := filepath.Join(scratch, "diff_keys.py")
	numpyScript := filepath.Join(scratch, "compare_f32.py")
	if err := os.WriteFile(script, diffKeysPy, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(numpyScript, compareF32Py, 0o644); err != nil {
		return err
	}
	// The numpy baseline needs numpy; Debian's python3-numpy provides it.
	numpyPython := ""
	for _, py := range []string{"python3", "/usr/bin/python3"} {
		if exec.Command(py, "-c", "import numpy").Run() == nil {
			numpyPython = py
			break
		}
	}
	scenarios := []scenario{
		{
			name: "validate-moe (Qwen3-30B-A3B shape: 16 sparse shards, 18,867 tensors, 61 GB)",
			setup: func(dir string) error {
				return fixture.WriteSparse(filepath.Join(dir, "moe"), fixture.Qwen3MoE30B, safetensors.BF16, 16)
			},
			ours: func(dir string) [][]string {
				moe := filepath.Join(dir, "moe")
				return [][]string{{bin, "validate", moe}, {bin, "inspect", moe}, {bin, "inspect", "--tree", moe}}
			},
			baselines: func(dir string) [][]string {
				return [][]string{{self, "nlp-validate", filepath.Join(dir, "moe")}}
			},
			pairs: func(our, _ int) bool { return our == 0 },
		},
		{
			name: "diff-moe (two Qwen3-30B-A3B-shaped sparse checkpoints, BF16 vs F32, 18,867 tensors each)",
			setup: func(dir string) error {
				if err := fixture.WriteSparse(filepath.Join(dir, "pub"), fixture.Qwen3MoE30B, safetensors.BF16, 16); err != nil {
					return err
				}
				return fixture.WriteSparse(filepath.Join(dir, "exp"), fixture.Qwen3MoE30B, safetensors.F32, 16)
			},
			ours: func(dir string) [][]string {
				return [][]string{{bin, "diff", filepath.Join(dir, "pub"), filepath.Join(dir, "exp")},
					{bin, "diff", "--format", "json", filepath.Join(dir, "pub"), filepath.Join(dir, "exp")}}
			},
			baselines: func(dir string) [][]string {
				return [][]string{
					{"python3", script, filepath.Join(dir, "pub"), filepath.Join(dir, "exp")},
					{self, "nlp-diff", filepath.Join(dir, "pub"), filepath.Join(dir, "exp")},
				}
			},
			pairs: func(our, _ int) bool { return our == 0 },
		},
		{
			name: "values (Qwen3-0.6B shape, 1.2 GB BF16, random values; page cache warm)",
			setup: func(dir string) error {
				q := fixture.Qwen3Dense06B
				perturb := func(t fixture.Tensor) fixture.Tensor { return fixture.Perturb(t, safetensors.BF16, 1e-3, 11) }
				for _, f := range []struct {
					name      string
					dtype     safetensors.DType
					transform func(fixture.Tensor) fixture.Tensor
				}{{"pub", safetensors.BF16, nil}, {"same", safetensors.BF16, nil},
					{"f32", safetensors.F32, fixture.Upcast}, {"perturbed", safetensors.BF16, perturb}} {
					if err := fixture.WriteStream(filepath.Join(dir, f.name+".safetensors"), q, f.dtype, f.transform); err != nil {
						return err
					}
				}
				return nil
			},
			ours: func(dir string) [][]string {
				f := func(n string) string { return filepath.Join(dir, n+".safetensors") }
				return [][]string{
					{bin, "diff", "--values", f("pub"), f("same")},
					{bin, "diff", "--values", f("pub"), f("f32")},
					{bin, "diff", "--values", f("pub"), f("perturbed")},
				}
			},
			baselines: func(dir string) [][]string {
				f := func(n string) string { return filepath.Join(dir, n+".safetensors") }
				out := [][]string{
					{"sh", "-c", "dd if=" + f("pub") + " of=/dev/null bs=4M status=none && dd if=" + f("same") + " of=/dev/null bs=4M status=none"},
					{"cmp", f("pub"), f("same")},
					{"sh", "-c", "dd if=" + f("pub") + " of=/dev/null bs=4M status=none && dd if=" + f("f32") + " of=/dev/null bs=4M status=none"},
				}
				if numpyPython != "" {
					out = append(out, []string{numpyPython, numpyScript, f("pub"), f("f32")})
				} else {
					fmt.Println("  (numpy baseline skipped: no numpy; apt-get install python3-numpy)")
				}
				return out
			},
			// identical pair: dd of both files, cmp; F32 pair: dd of both, numpy.
			pairs: func(our, b int) bool { return (our == 0 && b <= 1) || (our == 1 && b >= 2) },
		},
	}
	scenarios = append(scenarios, remoteScenarios(bin, self)...)
	for _, sc := range scenarios {
		if only != "" && !strings.Contains(sc.name, only) {
			continue
		}
		dir := filepath.Join(scratch, fmt.Sprint(len(sc.name)))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if err := sc.setup(dir); err != nil {
			return fmt.Errorf("%s: setup: %w", sc.name, err)
		}
		fmt.Printf("\n== %s, median of %d runs\n", sc.name, runs)
		ours, baselines := sc.ours(dir), sc.baselines(dir)
		all := append(ours, baselines...)
		results := make([]result, len(all))
		for i, c := range all {
			if results[i], err = measure(c, runs); err != nil {
				if sc.teardown != nil {
					sc.teardown()
				}
				return err
			}
		}
		for i, c := range all {
			line := fmt.Sprintf("  %-58s %9.1f ms", describe(c, bin, self, dir), ms(results[i].median))
			if i < len(ours) {
				line += fmt.Sprintf("   peak RSS %d MiB", results[i].maxRSS>>20)
			}
			fmt.Println(line)
		}
		fmt.Println("  ratios (baseline time / ckptcheck time; above 1, ckptcheck is faster):")
		for i, c := range ours {
			for j, b := range baselines {
				if sc.pairs != nil && !sc.pairs(i, j) {
					continue
				}
				fmt.Printf("    %-40s vs %-40s %6.2f\n", short(describe(c, bin, self, dir)), short(describe(b, bin, self, dir)),
					float64(results[len(ours)+j].median)/float64(results[i].median))
			}
		}
		if sc.report != nil {
			n := make([]int, len(results))
			for i, r := range results {
				n[i] = r.runs
			}
			sc.report(n)
		}
		if sc.teardown != nil {
			sc.teardown()
		}
		os.RemoveAll(dir)
	}
	return nil
}

func describe(c []string, bin, self, dir string) string {
	s := strings.Join(c, " ")
	s = strings.ReplaceAll(s, bin, "ckptcheck")
	s = strings.ReplaceAll(s, self, "baseline")
	return strings.ReplaceAll(s, dir+string(filepath.Separator), "")
}

type result struct {
	median time.Duration
	maxRSS int64 // bytes, the largest over the runs
	runs   int   // times the command ran, the warm-up included
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func short(s string) string {
	if len(s) > 40 {
		return s[:37] + "..."
	}
	return s
}

// measure runs the command once to warm the page cache, then runs times
// more (3 when one run takes over 3 s) and returns the median wall time and
// the peak RSS. Exit status 1 (findings) is accepted.
func measure(c []string, runs int) (result, error) {
	var times []time.Duration
	var r result
	// Peak RSS is read by /usr/bin/time, a small process that forks the
	// command: a child forked from this (large) process would report ours.
	timeBin, _ := exec.LookPath("/usr/bin/time")
	for i := 0; i <= runs; i++ {
		cmd := exec.Command(c[0], c[1:]...)
		rssFile := ""
		if timeBin != "" {
			f, err := os.CreateTemp("", "rss")
			if err != nil {
				return r, err
			}
			f.Close()
			rssFile = f.Name()
			cmd = exec.Command(timeBin, append([]string{"-f", "%M", "-o", rssFile, "--"}, c...)...)
		}
		start := time.Now()
		out, err := cmd.CombinedOutput()
		d := time.Since(start)
		if err != nil && cmd.ProcessState.ExitCode() != 1 {
			return r, fmt.Errorf("%v: %v\n%s", c, err, out)
		}
		if rssFile != "" {
			b, _ := os.ReadFile(rssFile)
			os.Remove(rssFile)
			lines := strings.Fields(string(b)) // "Command exited with non-zero status 1" may come first
			if kb, err := strconv.ParseInt(lines[len(lines)-1], 10, 64); len(lines) > 0 && err == nil {
				r.maxRSS = max(r.maxRSS, kb<<10)
			}
		}
		if i == 0 {
			if d > 3*time.Second {
				runs = min(runs, 3)
			}
			continue
		}
		times = append(times, d)
	}
	slices.Sort(times)
	r.median = times[len(times)/2]
	r.runs = len(times) + 1
	return r, nil
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
