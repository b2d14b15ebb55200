package partition

import (
	"fmt"

	"github.com/ckptcheck/ckptcheck/internal/textfmt"
)

// A Part is what one partial result of a run (a partition report, a
// partial manifest) says of itself, for Check.
type Part struct {
	// Name is where it was read from, for errors.
	Name string
	Partition
	// Fingerprint identifies the run: parts of one run share it.
	Fingerprint string
	// Items is how many work items the whole run has, over all partitions.
	Items int
	// At lists the places, in the whole run's work, of the items the part
	// did.
	At []int
	// Structural is how many of the part's Findings, first, are the ones
	// of the whole run that partition 0 alone carries; 0 where a kind of
	// part has none.
	Structural, Findings int
}

// A Kind names what is merged, for messages.
type Kind struct {
	// Part is one part ("report"), Item one work item ("work item").
	Part, Item string
}

// A Set is a checked set of parts: which partitions are there.
type Set struct {
	// Count is the run's partition count.
	Count int
	// First is, for each partition index, the position in the parts of its
	// first copy, or -1 where none was given.
	First []int
	// Again lists the positions of parts whose partition was given before.
	Again []int
	// Missing lists the indexes of the partitions none of the parts is.
	Missing []int
}

// Check checks the parts of one run against each other and against the
// data they hold, and says which partitions are there: every count and
// index a part claims must be one a run can make (1 ≤ Count ≤ 65,536,
// 0 ≤ Index < Count, 0 ≤ Structural ≤ Findings, and none but in partition
// 0, every place within 0…Items−1), and the parts must agree on Count,
// Fingerprint and Items. Over the first copy of each partition a work item
// is done at most once, and when every partition is there, each exactly
// once. Its memory is bounded by the parts' data and the partition limit,
// never by a number a part claims.
func Check(parts []Part, kind Kind) (*Set, error) {
	if len(parts) == 0 {
		return nil, fmt.Errorf("no %ss to merge", kind.Part)
	}
	first := &parts[0]
	for i := range parts {
		p := &parts[i]
		switch {
		case p.Count < 1 || p.Count > maxPartitions || p.Index < 0 || p.Index >= p.Count:
			return nil, fmt.Errorf("%s: partition %d/%d is not a partition", p.Name, p.Index, p.Count)
		case p.Count != first.Count:
			return nil, fmt.Errorf("%s is partition %s but %s is %s: the %ss are of different runs", p.Name, p.Partition, first.Name, first.Partition, kind.Part)
		case p.Fingerprint != first.Fingerprint:
			return nil, fmt.Errorf("%s has fingerprint %s but %s has %s: the %ss are of different inputs, settings or ckptcheck versions",
				p.Name, p.Fingerprint, first.Name, first.Fingerprint, kind.Part)
		case p.Items < 0:
			return nil, fmt.Errorf("%s: %s: the %s is damaged", p.Name, textfmt.Plural(p.Items, kind.Item), kind.Part)
		case p.Items != first.Items:
			return nil, fmt.Errorf("%s: %s, but %s has %d: the %ss disagree", p.Name, textfmt.Plural(p.Items, kind.Item), first.Name, first.Items, kind.Part)
		case p.Structural < 0 || p.Structural > p.Findings || (p.Index != 0 && p.Structural != 0):
			return nil, fmt.Errorf("%s: %d structural findings of %d: the %s is damaged", p.Name, p.Structural, p.Findings, kind.Part)
		case len(p.At) > p.Items:
			return nil, fmt.Errorf("%s: %s done of %d: the %s is damaged", p.Name, textfmt.Plural(len(p.At), kind.Item), p.Items, kind.Part)
		}
		for _, at := range p.At {
			if at < 0 || at >= p.Items {
				return nil, fmt.Errorf("%s: %s %d of %d: the %s is damaged", p.Name, kind.Item, at, p.Items, kind.Part)
			}
		}
	}
	n := first.Count
	s := &Set{Count: n, First: make([]int, n)} // n ≤ maxPartitions
	for i := range s.First {
		s.First[i] = -1
	}
	for k := range parts {
		i := parts[k].Index
		if s.First[i] >= 0 {
			s.Again = append(s.Again, k)
			continue
		}
		s.First[i] = k
	}
	done := make(map[int]int) // work item → the part that did it
	for i, k := range s.First {
		if k < 0 {
			s.Missing = append(s.Missing, i)
			continue
		}
		for _, at := range parts[k].At {
			if j, dup := done[at]; dup {
				return nil, fmt.Errorf("%s and %s both cover %s %d: the %ss disagree", parts[j].Name, parts[k].Name, kind.Item, at, kind.Part)
			}
			done[at] = k
		}
	}
	if len(s.Missing) == 0 && len(done) != first.Items {
		return nil, fmt.Errorf("the partitions cover %d %ss of %d: the %ss are damaged", len(done), kind.Item, first.Items, kind.Part)
	}
	return s, nil
}

// MissingText names the missing partitions: "partitions 1..2 of 4".
func (s *Set) MissingText() string {
	word := "partitions"
	if len(s.Missing) == 1 {
		word = "partition"
	}
	return fmt.Sprintf("%s %s of %d", word, textfmt.IndexRanges(s.Missing), s.Count)
}
