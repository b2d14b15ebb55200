package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"
)

// timeBin is /usr/bin/time when present: peak RSS is read by it, a small
// process that forks the command, since a child forked from this (large)
// process would report ours.
var timeBin, _ = exec.LookPath("/usr/bin/time")

// tempDir is where runOnce writes /usr/bin/time's report: the scratch
// folder, removed even when the run is interrupted.
var tempDir = ""

// A sample is one run of a command.
type sample struct {
	d   time.Duration
	rss int64 // peak RSS in bytes; 0 without /usr/bin/time
	// cpu is user+system time (0 without /usr/bin/time): on a shared,
	// loaded machine it moves far less than the wall time.
	cpu  time.Duration
	exit int
	out  []byte // stdout and stderr
}

// runOnce runs c once; a non-zero exit is in the sample, not an error.
func runOnce(c []string) (sample, error) {
	cmd := exec.Command(c[0], c[1:]...)
	rssFile := ""
	if timeBin != "" {
		f, err := os.CreateTemp(tempDir, "rss-")
		if err != nil {
			return sample{}, err
		}
		f.Close()
		rssFile = f.Name()
		defer os.Remove(rssFile)
		cmd = exec.Command(timeBin, append([]string{"-f", "%M %U %S", "-o", rssFile, "--"}, c...)...)
	}
	start := time.Now()
	out, err := cmd.CombinedOutput()
	s := sample{d: time.Since(start), out: out}
	if err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			return s, fmt.Errorf("%s: %w", strings.Join(c, " "), err)
		}
		s.exit = exit.ExitCode()
	}
	if rssFile != "" {
		b, _ := os.ReadFile(rssFile)
		// "Command exited with non-zero status 1" may come first.
		if f := strings.Fields(string(b)); len(f) >= 3 {
			if kb, err := strconv.ParseInt(f[len(f)-3], 10, 64); err == nil {
				s.rss = kb << 10
			}
			u, uerr := strconv.ParseFloat(f[len(f)-2], 64)
			sys, serr := strconv.ParseFloat(f[len(f)-1], 64)
			if uerr == nil && serr == nil {
				s.cpu = time.Duration((u + sys) * float64(time.Second))
			}
		}
	}
	return s, nil
}

// ok reports whether the run did its job: exit 0, or 1 for findings.
func (s sample) ok() bool { return s.exit == 0 || s.exit == 1 }

// failure describes a run that did not do its job.
func (s sample) failure(c []string) error {
	return fmt.Errorf("%s: exit %d\n%s", strings.Join(c, " "), s.exit, s.out)
}

// firstLine is the first non-empty line of a run's output, to say why it
// failed.
func (s sample) firstLine() string {
	for line := range bytes.Lines(s.out) {
		if l := strings.TrimSpace(string(line)); l != "" {
			return l
		}
	}
	return "(no output)"
}

// A result sums up the timed runs of one command.
type result struct {
	median time.Duration
	cpu    time.Duration // median user+system time
	maxRSS int64         // bytes, the largest over the runs
	exit   int           // of the last run
	runs   int
}

func summarize(samples []sample) result {
	r := result{runs: len(samples)}
	times := make([]time.Duration, len(samples))
	cpus := make([]time.Duration, len(samples))
	for i, s := range samples {
		times[i], cpus[i] = s.d, s.cpu
		r.maxRSS = max(r.maxRSS, s.rss)
		r.exit = s.exit
	}
	r.median, r.cpu = median(times), median(cpus)
	return r
}

func median[T time.Duration | float64](xs []T) T {
	xs = slices.Clone(xs)
	slices.Sort(xs)
	n := len(xs)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// measure runs c once to warm the page cache, then runs times more and
// sums up the timed runs; with shrink, 3 times when the warm-up took over
// 3 s. Exit status 1 (findings) is accepted; any other failure is an error.
func measure(c []string, runs int, shrink bool) (result, error) {
	var samples []sample
	for i := 0; i <= runs; i++ {
		s, err := runOnce(c)
		if err != nil {
			return result{}, err
		}
		if !s.ok() {
			return result{}, s.failure(c)
		}
		if i == 0 {
			if shrink && s.d > 3*time.Second {
				runs = min(runs, 3)
			}
			continue
		}
		samples = append(samples, s)
	}
	return summarize(samples), nil
}

// A comparison is one command timed with the base (old) and the tested
// (new) binary.
type comparison struct {
	old, new result
	// skipped says why the old binary could not run the command (it
	// exited with neither 0 nor 1, e.g. 2 for a flag it does not have);
	// old is then empty and only the new binary was timed.
	skipped string
	// pairs are new/old for each alternated pair of runs, sorted.
	pairs []float64
}

// compare warms up both commands, then runs them alternately, old then
// new, runs times each, so that drift of the machine's speed (other jobs,
// thermal, the page cache) falls on both alike.
func compare(oldC, newC []string, runs int) (comparison, error) {
	var c comparison
	w, err := runOnce(oldC)
	if err != nil {
		return c, err
	}
	if !w.ok() {
		c.skipped = fmt.Sprintf("exit %d: %s", w.exit, w.firstLine())
		c.new, err = measure(newC, runs, false)
		return c, err
	}
	if w, err = runOnce(newC); err != nil {
		return c, err
	} else if !w.ok() {
		return c, w.failure(newC)
	}
	var olds, news []sample
	for range runs {
		o, err := runOnce(oldC)
		if err != nil {
			return c, err
		}
		if !o.ok() {
			return c, fmt.Errorf("base binary: %w", o.failure(oldC))
		}
		n, err := runOnce(newC)
		if err != nil {
			return c, err
		}
		if !n.ok() {
			return c, n.failure(newC)
		}
		olds, news = append(olds, o), append(news, n)
		c.pairs = append(c.pairs, float64(n.d)/float64(o.d))
	}
	slices.Sort(c.pairs)
	c.old, c.new = summarize(olds), summarize(news)
	return c, nil
}
