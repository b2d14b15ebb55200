package partition

import (
	"cmp"
	"container/heap"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// A Partition is part Index (0-based) of Count: the share of a command's
// work one of Count runs does. The zero Partition is no partition: the
// whole work, as does 0 of 1.
type Partition struct {
	Index int `json:"index"`
	Count int `json:"count"`
	// From says where Index came from when the command line said auto: the
	// environment variable and its value ("SLURM_ARRAY_TASK_ID=3").
	From string `json:"from,omitempty"`
}

// maxPartitions bounds Count: far more runs than any engine schedules for
// one checkpoint, and small enough that a typo cannot make the assignment
// allocate without bound.
const maxPartitions = 1 << 16

// Whole reports whether p is the whole work.
func (p Partition) Whole() bool { return p.Count <= 1 }

// String is "i/n".
func (p Partition) String() string {
	if p.Count == 0 {
		return "0/1"
	}
	return strconv.Itoa(p.Index) + "/" + strconv.Itoa(p.Count)
}

// ErrNoPartitionIndex is wrapped by ParsePartition when "auto/n" finds none
// of the environment variables that say which part a run is.
var ErrNoPartitionIndex = errors.New("no partition index in the environment")

// The environment variables --partition auto/n reads, in this order.
const (
	// Slurm job arrays: the task's id, the array's first id and its step,
	// and how many tasks it has (sbatch --array=0-3, 1-4, 0-6:2).
	EnvSlurmTaskID = "SLURM_ARRAY_TASK_ID"
	EnvSlurmMin    = "SLURM_ARRAY_TASK_MIN"
	EnvSlurmStep   = "SLURM_ARRAY_TASK_STEP"
	EnvSlurmCount  = "SLURM_ARRAY_TASK_COUNT"
	// Kubernetes Indexed Jobs: 0-based.
	EnvJobCompletionIndex = "JOB_COMPLETION_INDEX"
	// GitLab CI parallel jobs: 1-based, with the total.
	EnvCINodeIndex = "CI_NODE_INDEX"
	EnvCINodeTotal = "CI_NODE_TOTAL"
)

// ParsePartition reads "i/n" (0 ≤ i < n) or "auto/n", which takes i from
// the environment through getenv (os.Getenv), in this order:
// SLURM_ARRAY_TASK_ID minus SLURM_ARRAY_TASK_MIN divided by
// SLURM_ARRAY_TASK_STEP (a Slurm array may start at 1 or step; its task
// count, when set, must be n), JOB_COMPLETION_INDEX (a Kubernetes Indexed
// Job), CI_NODE_INDEX − 1 (GitLab's parallel jobs, whose CI_NODE_TOTAL
// must be n). The result's From names the variable used. None set, or an
// index outside 0…n−1, is an error.
func ParsePartition(spec string, getenv func(string) string) (Partition, error) {
	is, ns, ok := strings.Cut(spec, "/")
	if !ok {
		return Partition{}, fmt.Errorf("--partition %q: want i/n (0 <= i < n) or auto/n", spec)
	}
	n, err := strconv.Atoi(ns)
	if err != nil || n < 1 || n > maxPartitions {
		return Partition{}, fmt.Errorf("--partition %q: n must be a whole number from 1 to %d", spec, maxPartitions)
	}
	if is != "auto" {
		i, err := strconv.Atoi(is)
		if err != nil || i < 0 || i >= n {
			return Partition{}, fmt.Errorf("--partition %q: i must be a whole number from 0 to %d", spec, n-1)
		}
		return Partition{Index: i, Count: n}, nil
	}
	p, err := partitionFromEnv(n, getenv)
	if err != nil {
		return Partition{}, fmt.Errorf("--partition %s: %w", spec, err)
	}
	return p, nil
}

func partitionFromEnv(n int, getenv func(string) string) (Partition, error) {
	num := func(name string, def int) (int, error) {
		s := getenv(name)
		if s == "" {
			return def, nil
		}
		v, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return 0, fmt.Errorf("%s=%q is not a whole number", name, s)
		}
		return v, nil
	}
	inRange := func(p Partition) (Partition, error) {
		if p.Index < 0 || p.Index >= n {
			return Partition{}, fmt.Errorf("%s gives partition %d, outside 0…%d", p.From, p.Index, n-1)
		}
		return p, nil
	}
	if getenv(EnvSlurmTaskID) != "" {
		id, err := num(EnvSlurmTaskID, 0)
		if err != nil {
			return Partition{}, err
		}
		lo, err := num(EnvSlurmMin, 0)
		if err != nil {
			return Partition{}, err
		}
		step, err := num(EnvSlurmStep, 1)
		if err != nil {
			return Partition{}, err
		}
		count, err := num(EnvSlurmCount, n)
		if err != nil {
			return Partition{}, err
		}
		from := fmt.Sprintf("%s=%d", EnvSlurmTaskID, id)
		if lo != 0 || step != 1 {
			from += fmt.Sprintf(" (%s=%d, %s=%d)", EnvSlurmMin, lo, EnvSlurmStep, step)
		}
		switch {
		case step < 1:
			return Partition{}, fmt.Errorf("%s=%d: the step must be at least 1", EnvSlurmStep, step)
		case (id-lo)%step != 0:
			return Partition{}, fmt.Errorf("%s: not a task of the array", from)
		case count != n:
			// A task re-run alone (sbatch --array=3) is an array of one:
			// its index would be 0. Say so rather than redo partition 0.
			return Partition{}, fmt.Errorf("the Slurm array has %s=%d tasks, not %d; to run one partition alone, give it: --partition i/%d", EnvSlurmCount, count, n, n)
		}
		return inRange(Partition{Index: (id - lo) / step, Count: n, From: from})
	}
	if getenv(EnvJobCompletionIndex) != "" {
		i, err := num(EnvJobCompletionIndex, 0)
		if err != nil {
			return Partition{}, err
		}
		return inRange(Partition{Index: i, Count: n, From: fmt.Sprintf("%s=%d", EnvJobCompletionIndex, i)})
	}
	if getenv(EnvCINodeIndex) != "" {
		i, err := num(EnvCINodeIndex, 0)
		if err != nil {
			return Partition{}, err
		}
		total, err := num(EnvCINodeTotal, n)
		if err != nil {
			return Partition{}, err
		}
		if total != n {
			return Partition{}, fmt.Errorf("%s=%d, not %d: the job's parallel: count and --partition disagree", EnvCINodeTotal, total, n)
		}
		return inRange(Partition{Index: i - 1, Count: n, From: fmt.Sprintf("%s=%d", EnvCINodeIndex, i)})
	}
	return Partition{}, fmt.Errorf("%w: none of %s, %s, %s is set (give the index instead: --partition i/%d)",
		ErrNoPartitionIndex, EnvSlurmTaskID, EnvJobCompletionIndex, EnvCINodeIndex, n)
}

// An Item is a unit of work to assign to a partition: a name, unique among
// the items, and a weight, the bytes it reads.
type Item struct {
	Name   string
	Weight int64
}

// Assign assigns items to n bins, balanced by weight: the heaviest item
// first, each into the lightest bin so far (the lowest-numbered among equal
// ones), items of equal weight in name order. The result, the bin of each
// item in the order given, depends on the items' names and weights alone,
// never on their order, so n runs on n machines that list the same items
// cover each exactly once. Items with the same name and weight are
// interchangeable and are taken in the order given. n < 1 is one bin.
func Assign(items []Item, n int) []int {
	bins := make([]int, len(items))
	if n <= 1 {
		return bins
	}
	order := make([]int, len(items))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		if c := cmp.Compare(items[b].Weight, items[a].Weight); c != 0 {
			return c
		}
		return strings.Compare(items[a].Name, items[b].Name)
	})
	h := make(loads, min(n, max(len(items), 1)))
	for i := range h {
		h[i].bin = i
	}
	// Fewer items than bins: the bins beyond are empty, never the lightest
	// in a way that matters, so the heap holds only as many as can fill.
	for _, i := range order {
		bins[i] = h[0].bin
		h[0].weight += max(items[i].Weight, 0)
		heap.Fix(&h, 0)
	}
	return bins
}

// Select returns the items of items that Assign gives to p's bin; for the
// whole work, all of them.
func (p Partition) Select(items []Item) []bool {
	in := make([]bool, len(items))
	bins := Assign(items, p.Count)
	for i, b := range bins {
		in[i] = b == p.Index || p.Whole()
	}
	return in
}

// loads is a min-heap of bins by weight, then bin number.
type loads []struct {
	weight int64
	bin    int
}

func (h loads) Len() int { return len(h) }
func (h loads) Less(i, j int) bool {
	if h[i].weight != h[j].weight {
		return h[i].weight < h[j].weight
	}
	return h[i].bin < h[j].bin
}
func (h loads) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *loads) Push(any)     { panic("loads: fixed size") }
func (h *loads) Pop() any     { panic("loads: fixed size") }
