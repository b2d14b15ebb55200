package partition

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

func TestParsePartition(t *testing.T) {
	tests := []struct {
		spec   string
		env    func(string) string
		want   Partition
		errHas string
	}{
		{spec: "0/4", want: Partition{Index: 0, Count: 4}},
		{spec: "3/4", want: Partition{Index: 3, Count: 4}},
		{spec: "0/1", want: Partition{Index: 0, Count: 1}},
		{spec: "4/4", errHas: "from 0 to 3"},
		{spec: "-1/4", errHas: "from 0 to 3"},
		{spec: "x/4", errHas: "from 0 to 3"},
		{spec: "1/0", errHas: "n must be"},
		{spec: "1/99999999", errHas: "n must be"},
		{spec: "3", errHas: "want i/n"},
		{spec: "", errHas: "want i/n"},
		// Slurm: 0-based, 1-based, stepped arrays.
		{spec: "auto/4", env: env("SLURM_ARRAY_TASK_ID", "3", "SLURM_ARRAY_TASK_MIN", "0", "SLURM_ARRAY_TASK_STEP", "1", "SLURM_ARRAY_TASK_COUNT", "4"),
			want: Partition{Index: 3, Count: 4, From: "SLURM_ARRAY_TASK_ID=3"}},
		{spec: "auto/4", env: env("SLURM_ARRAY_TASK_ID", "4", "SLURM_ARRAY_TASK_MIN", "1", "SLURM_ARRAY_TASK_STEP", "1"),
			want: Partition{Index: 3, Count: 4, From: "SLURM_ARRAY_TASK_ID=4 (SLURM_ARRAY_TASK_MIN=1, SLURM_ARRAY_TASK_STEP=1)"}},
		{spec: "auto/4", env: env("SLURM_ARRAY_TASK_ID", "6", "SLURM_ARRAY_TASK_MIN", "0", "SLURM_ARRAY_TASK_STEP", "2", "SLURM_ARRAY_TASK_COUNT", "4"),
			want: Partition{Index: 3, Count: 4, From: "SLURM_ARRAY_TASK_ID=6 (SLURM_ARRAY_TASK_MIN=0, SLURM_ARRAY_TASK_STEP=2)"}},
		{spec: "auto/4", env: env("SLURM_ARRAY_TASK_ID", "5", "SLURM_ARRAY_TASK_STEP", "2"), errHas: "not a task of the array"},
		{spec: "auto/4", env: env("SLURM_ARRAY_TASK_ID", "8", "SLURM_ARRAY_TASK_MIN", "0"), errHas: "outside 0…3"},
		{spec: "auto/4", env: env("SLURM_ARRAY_TASK_ID", "3", "SLURM_ARRAY_TASK_MIN", "3", "SLURM_ARRAY_TASK_COUNT", "1"), errHas: "--partition i/4"},
		{spec: "auto/4", env: env("SLURM_ARRAY_TASK_ID", "three"), errHas: "not a whole number"},
		{spec: "auto/4", env: env("SLURM_ARRAY_TASK_ID", "1", "SLURM_ARRAY_TASK_STEP", "0"), errHas: "at least 1"},
		// Slurm wins over the others.
		{spec: "auto/4", env: env("SLURM_ARRAY_TASK_ID", "1", "JOB_COMPLETION_INDEX", "2", "CI_NODE_INDEX", "3"),
			want: Partition{Index: 1, Count: 4, From: "SLURM_ARRAY_TASK_ID=1"}},
		// Kubernetes Indexed Jobs.
		{spec: "auto/4", env: env("JOB_COMPLETION_INDEX", "2", "CI_NODE_INDEX", "1"), want: Partition{Index: 2, Count: 4, From: "JOB_COMPLETION_INDEX=2"}},
		{spec: "auto/4", env: env("JOB_COMPLETION_INDEX", "4"), errHas: "outside 0…3"},
		{spec: "auto/4", env: env("JOB_COMPLETION_INDEX", "-1"), errHas: "outside 0…3"},
		// GitLab parallel jobs: 1-based.
		{spec: "auto/4", env: env("CI_NODE_INDEX", "1", "CI_NODE_TOTAL", "4"), want: Partition{Index: 0, Count: 4, From: "CI_NODE_INDEX=1"}},
		{spec: "auto/4", env: env("CI_NODE_INDEX", "4", "CI_NODE_TOTAL", "4"), want: Partition{Index: 3, Count: 4, From: "CI_NODE_INDEX=4"}},
		{spec: "auto/4", env: env("CI_NODE_INDEX", "0"), errHas: "outside 0…3"},
		{spec: "auto/4", env: env("CI_NODE_INDEX", "2", "CI_NODE_TOTAL", "3"), errHas: "CI_NODE_TOTAL=3, not 4"},
		{spec: "auto/4", env: env(), errHas: "none of SLURM_ARRAY_TASK_ID, JOB_COMPLETION_INDEX, CI_NODE_INDEX"},
	}
	for _, tt := range tests {
		getenv := tt.env
		if getenv == nil {
			getenv = env()
		}
		got, err := ParsePartition(tt.spec, getenv)
		switch {
		case tt.errHas != "" && (err == nil || !strings.Contains(err.Error(), tt.errHas)):
			t.Errorf("%q: error %v, want one saying %q", tt.spec, err, tt.errHas)
		case tt.errHas == "" && err != nil:
			t.Errorf("%q: %v", tt.spec, err)
		case tt.errHas == "" && got != tt.want:
			t.Errorf("%q: %+v, want %+v", tt.spec, got, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: error on several lines: %q", tt.spec, err)
		}
	}
	if _, err := ParsePartition("auto/2", env()); !errors.Is(err, ErrNoPartitionIndex) {
		t.Errorf("no index: %v, want ErrNoPartitionIndex", err)
	}
}

func FuzzParsePartition(f *testing.F) {
	for _, s := range []string{"0/4", "auto/4", "3/2", "/", "auto/", "1/65536", "-0/1"} {
		f.Add(s, "3", "1", "2")
	}
	f.Fuzz(func(t *testing.T, spec, id, lo, step string) {
		p, err := ParsePartition(spec, env("SLURM_ARRAY_TASK_ID", id, "SLURM_ARRAY_TASK_MIN", lo, "SLURM_ARRAY_TASK_STEP", step))
		if err == nil && (p.Count < 1 || p.Index < 0 || p.Index >= p.Count) {
			t.Fatalf("%q: %+v", spec, p)
		}
	})
}

func TestAssign(t *testing.T) {
	items := []Item{{"e", 1}, {"c", 3}, {"a", 5}, {"d", 3}, {"b", 4}}
	tests := []struct {
		n    int
		want []int
	}{
		// a(5)→0, b(4)→1, c(3)→1 (4 < 5), d(3)→0 (5 < 7), e(1)→1 (7 < 8).
		{2, []int{1, 1, 0, 0, 1}},
		{1, []int{0, 0, 0, 0, 0}},
		{0, []int{0, 0, 0, 0, 0}},
		// a→0, b→1, c→2, d→2? no: bins 0:5 1:4 2:3 → d→2 (3 is lightest), e→1 (4 < 5, 6).
		{3, []int{1, 2, 0, 2, 1}},
		// More bins than items: one item each, largest in bin 0.
		{8, []int{4, 2, 0, 3, 1}},
	}
	for _, tt := range tests {
		if got := Assign(items, tt.n); !slices.Equal(got, tt.want) {
			t.Errorf("n=%d: %v, want %v", tt.n, got, tt.want)
		}
	}
	// Ties in weight go by name, whatever the order given.
	same := []Item{{"z", 2}, {"y", 2}, {"x", 2}}
	if got := Assign(same, 2); !slices.Equal(got, []int{0, 1, 0}) {
		t.Errorf("equal weights: %v, want x and z in bin 0, y in bin 1", got)
	}
	if got := Assign(nil, 4); len(got) != 0 {
		t.Errorf("no items: %v", got)
	}
}

// TestAssignIgnoresOrder shuffles the items: every item keeps its bin.
func TestAssignIgnoresOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var items []Item
	for i := range 500 {
		items = append(items, Item{Name: string(rune('a'+i%26)) + strings.Repeat("x", i/26), Weight: int64(rng.IntN(8)) << 20})
	}
	want := map[string]int{}
	for i, b := range Assign(items, 7) {
		want[items[i].Name] = b
	}
	for range 5 {
		rng.Shuffle(len(items), func(i, j int) { items[i], items[j] = items[j], items[i] })
		for i, b := range Assign(items, 7) {
			if want[items[i].Name] != b {
				t.Fatalf("%s: bin %d after a shuffle, %d before", items[i].Name, b, want[items[i].Name])
			}
		}
	}
}
