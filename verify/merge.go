package verify

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/ckptcheck/ckptcheck/internal/textfmt"
	"github.com/ckptcheck/ckptcheck/partition"
)

// PartitionInfo is what a partition report carries for Merge: which part
// it is, the fingerprint of the run (see Comparison.Fingerprint), and the
// work it covered.
type PartitionInfo struct {
	Partition
	Fingerprint string `json:"fingerprint"`
	// Structural is how many of the report's findings, first, are the
	// structural ones (validation and the key-by-key diff): all of them in
	// partition 0's report, none in the others'.
	Structural int `json:"structural"`
	// Items is how many work items the whole run has, over all partitions.
	Items int `json:"items"`
	// Ignore lists the run's --ignore rules, which merge applies again to
	// the summaries it recomputes.
	Ignore []string `json:"ignore,omitempty"`
	// Tensors is the work this partition did, in order.
	Tensors []Covered `json:"tensors"`
}

// Covered is one work item a partition did: a tensor compared (its values'
// statistics are in the report's values, in the same order) or a tie check.
type Covered struct {
	Key string `json:"key"`
	// Tie is the side of a tie check (that side's lm_head.weight against
	// its embedding); empty for a tensor.
	Tie Side `json:"tie,omitempty"`
	// At is the item's place in the whole run's work: a tensor's place in
	// the values' tensor list; tie checks come after every tensor.
	At int `json:"at"`
	// Bytes is how many bytes the item reads, both sides.
	Bytes int64 `json:"bytes"`
}

// MergeInfo says what a merged report was merged from.
type MergeInfo struct {
	Count       int    `json:"count"`
	Fingerprint string `json:"fingerprint"`
	// Reports names the report merged for each partition, "" where none was.
	Reports []string `json:"reports"`
}

// A MergeInput is a partition report and the name it was read from.
type MergeInput struct {
	Name   string
	Report *Report
}

// Merge merges the partition reports of one diff --values run into the
// report the run would have made whole: the structural findings of
// partition 0, every partition's value statistics and findings in the
// whole run's order, the counts summed, and the unchanged summary
// recomputed. It returns an error, merging nothing, when a report is not a
// partition report or is of another run (another partition count or
// fingerprint: other inputs, settings or tool version). A partition given
// twice (the first is merged) or not at all is a partition_duplicate or
// partition_missing error finding in the merged report. A partition re-run
// after a failure merges like any other: its fingerprint is the same.
func Merge(parts []MergeInput, failOn Severity) (*Report, error) {
	if len(parts) == 0 {
		return nil, fmt.Errorf("no reports to merge")
	}
	first := parts[0]
	checked := make([]partition.Part, len(parts))
	for k, in := range parts {
		r, p := in.Report, in.Report.Partition
		switch {
		case p == nil:
			return nil, fmt.Errorf("%s: not a partition report (it was not made with --partition)", in.Name)
		case r.Command != first.Report.Command:
			return nil, fmt.Errorf("%s is a %s report but %s is a %s report: the reports are of different runs", in.Name, r.Command, first.Name, first.Report.Command)
		case r.Command == "diff" && r.Values == nil && r.LoRA == nil, r.Command != "diff" && r.Command != "validate":
			return nil, fmt.Errorf("%s: a %s report without values: merge takes diff --values --partition, diff --lora --partition and validate --hashes --partition reports", in.Name, r.Command)
		case (r.LoRA == nil) != (first.Report.LoRA == nil):
			return nil, fmt.Errorf("%s and %s are reports of diff --lora and diff --values: the reports are of different runs", in.Name, first.Name)
		}
		if r.Command == "diff" && r.LoRA == nil {
			if err := checkCovered(in); err != nil {
				return nil, err
			}
		}
		checked[k] = partition.Part{Name: in.Name, Partition: p.Partition, Fingerprint: p.Fingerprint, Items: p.Items,
			At: make([]int, len(p.Tensors)), Structural: p.Structural, Findings: len(r.Findings)}
		for i, c := range p.Tensors {
			checked[k].At[i] = c.At
		}
	}
	set, err := partition.Check(checked, partition.Kind{Part: "report", Item: "work item"})
	if err != nil {
		return nil, err
	}
	n := set.Count
	info := &MergeInfo{Count: n, Fingerprint: first.Report.Partition.Fingerprint, Reports: make([]string, n)}
	byIndex := make([]*Report, n)
	for i, k := range set.First {
		if k >= 0 {
			byIndex[i], info.Reports[i] = parts[k].Report, parts[k].Name
		}
	}
	var problems []Finding
	for _, k := range set.Again {
		in := parts[k]
		problems = append(problems, Finding{Code: CodePartitionDuplicate, Severity: Error, File: in.Name,
			Message: fmt.Sprintf("partition %s given again (first in %s); merged the first", in.Report.Partition.Partition, info.Reports[in.Report.Partition.Index])})
	}
	if missing := set.Missing; len(missing) > 0 {
		msg := set.MissingText() + " missing: their tensors are not in this report"
		if missing[0] == 0 {
			msg += ", nor the structural findings, which partition 0 carries"
		}
		problems = append(problems, Finding{Code: CodePartitionMissing, Severity: Error, Message: msg, Expected: n, Got: n - len(missing)})
	}
	if first.Report.Command == "validate" {
		return mergeFindings(byIndex, problems, info, failOn), nil
	}
	if first.Report.LoRA != nil {
		return mergeLoRA(byIndex, problems, info, failOn)
	}
	var ignores []Ignore
	for _, spec := range first.Report.Partition.Ignore {
		ig, err := ParseIgnore(spec)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", first.Name, err)
		}
		ignores = append(ignores, ig)
	}
	values, valueFindings, err := mergeValues(byIndex, info, ignores)
	if err != nil {
		return nil, err
	}
	findings := problems
	var inputs []Input
	ignored := 0
	for _, r := range byIndex {
		if r == nil {
			continue
		}
		if inputs == nil {
			inputs = r.Inputs
		}
		// Each partition counted what it left out: part 0 the structural
		// findings, every part its values' (the keys of its share of a
		// summary too, so the sum is the single run's count).
		ignored += r.Summary.Ignored
	}
	if r := byIndex[0]; r != nil {
		findings = append(findings, r.Findings[:r.Partition.Structural]...)
	}
	findings = append(findings, valueFindings...)
	rep := NewReport("diff", failOn, inputs, findings)
	rep.Summary.Ignored = ignored
	rep.Values, rep.Merged = values, info
	return rep, nil
}

// mergeFindings merges the reports of validate --hashes --partition: the
// validation findings of partition 0, then every partition's hash
// findings in file order, as a single run lists them.
func mergeFindings(byIndex []*Report, problems []Finding, info *MergeInfo, failOn Severity) *Report {
	findings := problems
	var hashes []Finding
	var inputs []Input
	for i, r := range byIndex {
		if r == nil {
			continue
		}
		if inputs == nil {
			inputs = r.Inputs
		}
		s := r.Partition.Structural // checked: within the findings
		if i == 0 {
			findings = append(findings, r.Findings[:s]...)
		}
		hashes = append(hashes, r.Findings[s:]...)
	}
	slices.SortStableFunc(hashes, func(a, b Finding) int { return cmp.Compare(a.File, b.File) })
	rep := NewReport("validate", failOn, inputs, append(findings, hashes...))
	rep.Merged = info
	return rep
}

// checkCovered checks that a diff report's covered work and its
// statistics agree: the tensors covered are the tensors listed, in order.
// partition.Check checks the places and counts.
func checkCovered(in MergeInput) error {
	p, v := in.Report.Partition, in.Report.Values
	k := 0
	for _, c := range p.Tensors {
		if c.Tie != "" {
			continue
		}
		if k >= len(v.Tensors) || v.Tensors[k].Key != c.Key {
			return fmt.Errorf("%s: the tensors covered and the value statistics disagree at %s: the report is damaged", in.Name, textfmt.Quote(c.Key))
		}
		k++
	}
	if k != len(v.Tensors) {
		return fmt.Errorf("%s: %d value statistics for %d tensors covered: the report is damaged", in.Name, len(v.Tensors), k)
	}
	return nil
}

// mergeValues puts the partitions' statistics and value findings in the
// whole run's order and sums the counts.
func mergeValues(byIndex []*Report, info *MergeInfo, ignores []Ignore) (*ValueReport, []Finding, error) {
	out := &ValueReport{Tensors: []TensorStats{}}
	type placed struct {
		at    int
		stats *TensorStats
	}
	var tensors []placed
	type ranked struct {
		at int
		f  Finding
	}
	var findings []ranked
	seenKey := make(map[string]int) // tensor → partition
	for i, r := range byIndex {
		if r == nil {
			continue
		}
		v, p := r.Values, r.Partition
		// The fingerprint covers what was expected; a report that does
		// not say is of ExpectEqual.
		expect, err := ParseExpect(string(v.Expect))
		if err != nil {
			return nil, nil, fmt.Errorf("%s: values: %v", info.Reports[i], err)
		}
		if out.Expect == "" {
			out.Expect = expect
		} else if out.Expect != expect {
			return nil, nil, fmt.Errorf("%s expects %s values, the reports before it %s: the reports disagree", info.Reports[i], expect, out.Expect)
		}
		out.Compared += v.Compared
		out.BitIdentical += v.BitIdentical
		out.Equal += v.Equal
		out.WithinTolerance += v.WithinTolerance
		out.Mismatched += v.Mismatched
		out.Skipped += v.Skipped
		out.BytesRead += v.BytesRead
		out.Tolerant = out.Tolerant || v.Tolerant
		atOf := make(map[string]int, len(p.Tensors))
		tieAt := make(map[Side]int)
		k := 0
		for _, c := range p.Tensors {
			if c.Tie != "" {
				tieAt[c.Tie] = c.At
				continue
			}
			if j, dup := seenKey[c.Key]; dup {
				return nil, nil, fmt.Errorf("%s and %s both cover %s: the reports disagree", info.Reports[j], info.Reports[i], textfmt.Quote(c.Key))
			}
			seenKey[c.Key] = i
			atOf[c.Key] = c.At
			tensors = append(tensors, placed{c.At, &v.Tensors[k]})
			k++
		}
		for _, f := range r.Findings[p.Structural:] {
			if f.Code == CodeUnchanged || f.Code == CodeNotTrained {
				continue // recomputed over every partition below
			}
			at, ok := atOf[f.Key]
			if f.Code == CodeTiedWeightMismatch {
				at, ok = tieAt[f.Side]
			}
			if !ok {
				at = p.Items // a finding of no item: after the others
			}
			findings = append(findings, ranked{at, f})
		}
	}
	if out.Expect == "" {
		out.Expect = ExpectEqual
	}
	slices.SortStableFunc(tensors, func(a, b placed) int { return cmp.Compare(a.at, b.at) })
	var unchanged []string
	for _, t := range tensors {
		out.Tensors = append(out.Tensors, *t.stats)
		if t.stats.Skipped == "" && t.stats.BitIdentical {
			unchanged = append(unchanged, t.stats.Key)
		}
	}
	slices.SortStableFunc(findings, func(a, b ranked) int { return cmp.Compare(a.at, b.at) })
	fs := make([]Finding, 0, len(findings)+1)
	for _, f := range findings {
		fs = append(fs, f.f)
	}
	var whole []Finding
	if (out.Tolerant || out.Expect.Derived()) && len(unchanged) > 0 {
		whole = append(whole, unchangedFinding(unchanged))
	}
	if f, ok := notTrained(out.Tensors); ok && out.Expect.Derived() {
		whole = append(whole, f)
	}
	// The partitions counted the keys the ignores left out of their
	// shares; here they are only left out again.
	kept, _ := ApplyIgnores(whole, ignores)
	fs = append(fs, kept...)
	out.Findings = fs
	return out, fs, nil
}

// String says how many partitions were merged, and the fingerprint's
// first digits: "4 of 4 partitions, fingerprint 3f2a9c01b7de".
func (m *MergeInfo) String() string {
	have := 0
	for _, r := range m.Reports {
		if r != "" {
			have++
		}
	}
	fp := strings.TrimPrefix(m.Fingerprint, "sha256:")
	return fmt.Sprintf("%d of %d partitions, fingerprint %s", have, m.Count, fp[:min(12, len(fp))])
}
