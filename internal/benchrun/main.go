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
	"strings"
	"syscall"
	"time"

	nlp "github.com/nlpodyssey/safetensors"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

//go:embed diff_keys.py
var diffKeysPy []byte

func main() {
	if len(os.Args) > 2 && os.Args[1] == "nlp-validate" {
		if _, err := nlpValidate(os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, "nlp-validate:", err)
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
	// ours are ckptcheck's commands; each baseline is compared with ours[0].
	ours, baselines func(dir string) [][]string
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
	if err := os.WriteFile(script, diffKeysPy, 0o644); err != nil {
		return err
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
		},
	}
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
		medians := make([]time.Duration, len(ours)+len(baselines))
		for i, c := range append(ours, baselines...) {
			if medians[i], err = median(c, runs); err != nil {
				return err
			}
		}
		for i, c := range append(ours, baselines...) {
			line := fmt.Sprintf("  %-50s %9.1f ms", describe(c, bin, self, dir), float64(medians[i].Microseconds())/1000)
			if i >= len(ours) {
				line += fmt.Sprintf("   %.1fx the time of `%s`", float64(medians[i])/float64(medians[0]), describe(ours[0], bin, self, dir))
			}
			fmt.Println(line)
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

// median runs the command once to warm the page cache, then runs times more
// and returns the median wall time. Exit status 1 (findings) is accepted.
func median(c []string, runs int) (time.Duration, error) {
	var times []time.Duration
	for i := 0; i <= runs; i++ {
		cmd := exec.Command(c[0], c[1:]...)
		start := time.Now()
		out, err := cmd.CombinedOutput()
		d := time.Since(start)
		if err != nil && cmd.ProcessState.ExitCode() != 1 {
			return 0, fmt.Errorf("%v: %v\n%s", c, err, out)
		}
		if i > 0 {
			times = append(times, d)
		}
	}
	slices.Sort(times)
	return times[len(times)/2], nil
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
