package partition

import (
	"slices"
	"strings"
	"testing"
)

// parts3 is a good run of three parts over five items, partition 0 with
// two structural findings.
func parts3() []Part {
	return []Part{
		{Name: "p0", Partition: Partition{Index: 0, Count: 3}, Fingerprint: "f", Items: 5, At: []int{0, 3}, Structural: 2, Findings: 4},
		{Name: "p1", Partition: Partition{Index: 1, Count: 3}, Fingerprint: "f", Items: 5, At: []int{1, 4}, Findings: 1},
		{Name: "p2", Partition: Partition{Index: 2, Count: 3}, Fingerprint: "f", Items: 5, At: []int{2}},
	}
}

var kind = Kind{Part: "report", Item: "work item"}

func TestCheck(t *testing.T) {
	s, err := Check(parts3(), kind)
	if err != nil || s.Count != 3 || !slices.Equal(s.First, []int{0, 1, 2}) || s.Again != nil || s.Missing != nil {
		t.Fatalf("a good run: %+v, %v", s, err)
	}
	ps := parts3()
	s, err = Check([]Part{ps[2], ps[0], ps[2]}, kind)
	if err != nil || !slices.Equal(s.First, []int{1, -1, 0}) || !slices.Equal(s.Again, []int{2}) || !slices.Equal(s.Missing, []int{1}) {
		t.Fatalf("one given twice, one missing: %+v, %v", s, err)
	}
	if got := s.MissingText(); got != "partition 1 of 3" {
		t.Errorf("MissingText = %q", got)
	}
}

// TestCheckRefuses gives Check parts whose claims no run makes: each is
// refused with one line naming the part, whatever the number.
func TestCheckRefuses(t *testing.T) {
	const huge = 1 << 62
	tests := []struct {
		name   string
		change func(ps []Part) []Part
		says   string
	}{
		{"none", func([]Part) []Part { return nil }, "no reports to merge"},
		{"count -1", func(ps []Part) []Part { ps[1].Count = -1; return ps }, "p1: partition 1/-1 is not a partition"},
		{"count 0", func(ps []Part) []Part { ps[0].Count = 0; return ps }, "p0: partition 0/0 is not a partition"},
		{"count 2^62", func(ps []Part) []Part {
			for i := range ps {
				ps[i].Count = huge
			}
			return ps
		}, "is not a partition"},
		{"count 10^8", func(ps []Part) []Part {
			for i := range ps {
				ps[i].Count = 100_000_000
			}
			return ps
		}, "is not a partition"},
		{"index -1", func(ps []Part) []Part { ps[2].Index = -1; return ps }, "p2: partition -1/3"},
		{"index = count", func(ps []Part) []Part { ps[2].Index = 3; return ps }, "p2: partition 3/3"},
		{"other count", func(ps []Part) []Part { ps[1].Count = 4; return ps }, "p1 is partition 1/4 but p0 is 0/3: the reports are of different runs"},
		{"other fingerprint", func(ps []Part) []Part { ps[2].Fingerprint = "g"; return ps }, "p2 has fingerprint g but p0 has f"},
		{"items -1", func(ps []Part) []Part {
			for i := range ps {
				ps[i].Items = -1
			}
			return ps
		}, "p0: -1 work items: the report is damaged"},
		{"other items", func(ps []Part) []Part { ps[1].Items = huge; return ps }, "p1: 4,611,686,018,427,387,904 work items, but p0 has 5"},
		{"structural -1", func(ps []Part) []Part { ps[0].Structural = -1; return ps }, "p0: -1 structural findings of 4"},
		{"structural 2^62", func(ps []Part) []Part { ps[0].Structural = huge; return ps }, "p0: 4611686018427387904 structural findings of 4"},
		{"structural beyond 0", func(ps []Part) []Part { ps[1].Structural = 1; return ps }, "p1: 1 structural findings of 1"},
		{"place -5", func(ps []Part) []Part { ps[1].At[0] = -5; return ps }, "p1: work item -5 of 5: the report is damaged"},
		{"place = items", func(ps []Part) []Part { ps[2].At[0] = 5; return ps }, "p2: work item 5 of 5"},
		{"more places than items", func(ps []Part) []Part { ps[2].At = []int{0, 0, 0, 0, 0, 0}; return ps }, "p2: 6 work items done of 5"},
		{"an item twice", func(ps []Part) []Part { ps[2].At = []int{3}; return ps }, "p0 and p2 both cover work item 3: the reports disagree"},
		{"an item nowhere", func(ps []Part) []Part { ps[2].At = nil; return ps }, "the partitions cover 4 work items of 5: the reports are damaged"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Check(tt.change(parts3()), kind)
			if err == nil || !strings.Contains(err.Error(), tt.says) || strings.Contains(err.Error(), "\n") {
				t.Errorf("%+v, %v; want one line saying %q", s, err, tt.says)
			}
		})
	}
}

// A copy given again is checked like the rest, but its work is not counted
// twice: only the first copy of a partition is merged.
func TestCheckCopies(t *testing.T) {
	ps := parts3()
	again := ps[1]
	again.Name = "p1-again"
	if _, err := Check(append(ps, again), kind); err != nil {
		t.Errorf("a partition re-run: %v", err)
	}
	again.At = []int{7}
	if _, err := Check(append(parts3(), again), kind); err == nil {
		t.Error("a damaged copy passed")
	}
}
