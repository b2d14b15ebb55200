package verify

import (
	"fmt"
	"strings"
	"testing"
)

// hashesParts is a validate --hashes --partition run over seven files in
// n parts, as manifest.NewHashesReport makes them and merge reads them
// back: two validation findings, carried by partition 0, and a
// hash_mismatch for every third file.
func hashesParts(t testing.TB, n int) []*Report {
	t.Helper()
	var items []Item
	for i := range 7 {
		items = append(items, Item{Name: fmt.Sprintf("model-%05d.safetensors", i), Weight: int64(100 + i)})
	}
	structural := []Finding{
		{Code: CodeConfigMismatch, Severity: Warning, Message: "a structural finding"},
		{Code: CodeMissingKey, Severity: Error, Key: "lm_head.weight", Message: "another"},
	}
	var out []*Report
	for i := range n {
		p := Partition{Index: i, Count: n}
		var mine []Finding
		if i == 0 {
			mine = append(mine, structural...)
		}
		covered := []Covered{}
		for k, in := range p.Select(items) {
			if !in {
				continue
			}
			covered = append(covered, Covered{Key: items[k].Name, At: k, Bytes: items[k].Weight})
			if k%3 == 0 {
				mine = append(mine, Finding{Code: CodeHashMismatch, Severity: Error, File: items[k].Name, Message: "corrupt"})
			}
		}
		r := NewReport("validate", Error, nil, mine)
		r.Partition = &PartitionInfo{Partition: p, Fingerprint: "sha256:run", Items: len(items), Tensors: covered}
		if i == 0 {
			r.Partition.Structural = len(structural)
		}
		out = append(out, roundTrip(t, r))
	}
	return out
}

func mergeInputs(rs []*Report) []MergeInput {
	in := make([]MergeInput, len(rs))
	for i, r := range rs {
		in[i] = MergeInput{Name: fmt.Sprintf("part%d.json", i), Report: r}
	}
	return in
}

func TestMergeHashes(t *testing.T) {
	whole := hashesParts(t, 1)[0]
	merged, err := Merge(mergeInputs(hashesParts(t, 3)), Error)
	if err != nil {
		t.Fatal(err)
	}
	if len(merged.Findings) != len(whole.Findings) || merged.Summary.Error != whole.Summary.Error {
		t.Errorf("merged %d findings (%d errors), the single run %d (%d)", len(merged.Findings), merged.Summary.Error, len(whole.Findings), whole.Summary.Error)
	}
}

// TestMergeRefusesClaims gives Merge a part of each kind claiming counts or
// places no run makes: each is refused with one line, never a panic, and
// a validate part is held to what a diff part is.
func TestMergeRefusesClaims(t *testing.T) {
	pub, exp := fineTunePair(t)
	var diffs []*Report
	for i := range 3 {
		diffs = append(diffs, partitionRun(t, pub, exp, Partition{Index: i, Count: 3}))
	}
	const huge = 1 << 62
	claims := []struct {
		name   string
		change func(p *PartitionInfo)
		says   string
	}{
		{"structural -1", func(p *PartitionInfo) { p.Structural = -1 }, "-1 structural findings"},
		{"structural 2^62", func(p *PartitionInfo) { p.Structural = huge }, "structural findings of"},
		{"count -1", func(p *PartitionInfo) { p.Count = -1 }, "is not a partition"},
		{"count 2^62", func(p *PartitionInfo) { p.Count = huge }, "is not a partition"},
		{"index 7", func(p *PartitionInfo) { p.Index = 7 }, "partition 7/3 is not a partition"},
		{"items -1", func(p *PartitionInfo) { p.Items = -1 }, "work items"},
		{"items 2^62", func(p *PartitionInfo) { p.Items = huge }, "work items, but"},
		{"place -5", func(p *PartitionInfo) {
			p.Tensors = append([]Covered{{Key: "x", Tie: Published, At: -5}}, p.Tensors...)
		}, "work item -5"},
		{"place 2^62", func(p *PartitionInfo) {
			p.Tensors = append([]Covered{{Key: "x", Tie: Published, At: huge}}, p.Tensors...)
		}, "work item 4611686018427387904"},
	}
	for _, kind := range []struct {
		name  string
		parts func() []*Report
	}{
		{"diff", func() []*Report { return []*Report{diffs[0], diffs[1], diffs[2]} }},
		{"validate", func() []*Report { return hashesParts(t, 3) }},
	} {
		for _, c := range claims {
			t.Run(kind.name+"/"+c.name, func(t *testing.T) {
				parts := kind.parts()
				// The first part, or partition 0 when the claim is about
				// its structural findings.
				damaged := *parts[0]
				dp := *damaged.Partition
				c.change(&dp)
				damaged.Partition = &dp
				parts[0] = &damaged
				_, err := Merge(mergeInputs(parts), Error)
				if err == nil || !strings.Contains(err.Error(), c.says) || strings.Contains(err.Error(), "\n") {
					t.Errorf("%v; want one line saying %q", err, c.says)
				}
			})
		}
	}
}
