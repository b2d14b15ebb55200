package verify

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/ckptcheck/ckptcheck/checkpoint"
)

// diff --lora --partition i/n: the work items are the merge check's
// tensors (every tensor of the base with a readable, same-shaped merged
// tensor, in the published view's order), each weighing the bytes it
// reads, assigned as diff --values assigns its tensors. Every part reads
// the whole adapter (it is small) and reports the adapter's findings only
// in part 0, with the structural diff.

// LoRAFingerprint is Fingerprint for diff --lora: the run's settings
// (without the adapter's path), the probes and seed, both sides as
// Fingerprint covers them, and the adapter's files, config and tensors.
func (d *Comparison) LoRAFingerprint(adapterC *checkpoint.Checkpoint, probes int, settings []string) string {
	w := fingerprinter{h: sha256.New()}
	w.str(fingerprintVersion + " lora")
	w.str(d.Fingerprint(ValuePolicy{}, settings))
	if probes <= 0 {
		probes = DefaultLoRAProbes
	}
	w.num(probes)
	w.u64(LoRASeed)
	w.checkpoint(adapterC)
	if p := adapterC.PEFT; p != nil {
		w.strs([]string{p.Name, p.PEFTType, p.BaseModel, p.Trainer, p.TargetRegex,
			strconv.FormatUint(p.Rank, 10), strconv.FormatFloat(p.Scale, 'g', -1, 64), strconv.FormatFloat(p.Alpha, 'g', -1, 64),
			strconv.FormatBool(p.RSLoRA), strconv.FormatBool(p.DoRA)})
		w.strs(p.TargetModules)
		w.strs(p.ModulesToSave)
		for _, k := range slices.Sorted(maps.Keys(p.RankPattern)) {
			w.str(k + "=" + strconv.FormatUint(p.RankPattern[k], 10))
		}
		for _, k := range slices.Sorted(maps.Keys(p.AlphaPattern)) {
			w.str(k + "=" + strconv.FormatFloat(p.AlphaPattern[k], 'g', -1, 64))
		}
	}
	srcs, _ := sources(adapterC)
	w.num(len(srcs))
	for _, s := range srcs {
		t := s.Tensor
		w.str(s.Shard.Name + " " + t.Name + " " + t.DType.String() + " " + fmt.Sprint(t.Shape))
	}
	return "sha256:" + hex.EncodeToString(w.h.Sum(nil))
}

// LoRAReportInput is what NewLoRAReport makes the report of diff --lora
// from.
type LoRAReportInput struct {
	FailOn Severity
	Inputs []Input
	// Comparison is the diff of base and merge, whose findings come first;
	// LoRA its merge check.
	Comparison *Comparison
	LoRA       *LoRAReport
	// Partition is LoRAOptions.Partition; Fingerprint the run's
	// LoRAFingerprint, for Merge.
	Partition   Partition
	Fingerprint string
	Ignores     []Ignore
}

// NewLoRAReport is the report of diff --lora: the diff's findings, the
// adapter's, then the merge check's, less those the ignores silence. For
// a partition (even 0/1) it is that partition's report, for Merge, as
// NewValuesReport's: the diff's and the adapter's findings only in part 0.
func NewLoRAReport(in LoRAReportInput) *Report {
	l, p := in.LoRA, in.Partition
	var structural []Finding
	if p.Count == 0 || p.Index == 0 {
		structural = append(slices.Clip(in.Comparison.Findings), l.Findings[:l.adapterFindings]...)
	}
	structural, ignoredS := ApplyIgnores(structural, in.Ignores)
	checks, ignoredC := ApplyIgnores(l.Findings[l.adapterFindings:], in.Ignores)
	r := NewReport("diff", in.FailOn, in.Inputs, append(slices.Clip(structural), checks...))
	r.LoRA = l
	r.Summary.Ignored = ignoredS + ignoredC
	if p.Count == 0 {
		return r
	}
	r.Partition = newPartitionInfo(p, in.Fingerprint, len(structural), l.Items, l.Covered, in.Ignores)
	return r
}

// mergeLoRA merges the parts of one diff --lora run: part 0's structural
// findings, then every part's check findings and targets in the whole
// run's order.
func mergeLoRA(byIndex []*Report, problems []Finding, info *MergeInfo, failOn Severity) (*Report, error) {
	out := &LoRAReport{Targets: []LoRATarget{}}
	type ranked[T any] struct {
		at int
		v  T
	}
	var targets []ranked[LoRATarget]
	var findings []ranked[Finding]
	var inputs []Input
	ignored := 0
	seen := map[string]int{}
	for i, r := range byIndex {
		if r == nil {
			continue
		}
		l, p := r.LoRA, r.Partition
		if inputs == nil {
			inputs, out.Probes, out.Seed = r.Inputs, l.Probes, l.Seed
		}
		out.BytesRead += l.BytesRead
		ignored += r.Summary.Ignored
		atOf := make(map[string]int, len(p.Tensors))
		for _, c := range p.Tensors {
			if j, dup := seen[c.Key]; dup {
				return nil, fmt.Errorf("%s and %s both cover %q: the reports disagree", info.Reports[j], info.Reports[i], c.Key)
			}
			seen[c.Key], atOf[c.Key] = i, c.At
		}
		for _, t := range l.Targets {
			at, ok := atOf[t.Key]
			if !ok {
				return nil, fmt.Errorf("%s: target %q is not among the tensors it covers: the report is damaged", info.Reports[i], t.Key)
			}
			targets = append(targets, ranked[LoRATarget]{at, t})
		}
		for _, f := range r.Findings[p.Structural:] {
			at, ok := atOf[f.Key]
			if !ok {
				at = p.Items
			}
			findings = append(findings, ranked[Finding]{at, f})
		}
	}
	slices.SortStableFunc(targets, func(a, b ranked[LoRATarget]) int { return a.at - b.at })
	slices.SortStableFunc(findings, func(a, b ranked[Finding]) int { return a.at - b.at })
	for _, t := range targets {
		out.Targets = append(out.Targets, t.v)
	}
	fs := problems
	if r := byIndex[0]; r != nil {
		fs = append(fs, r.Findings[:r.Partition.Structural]...)
	}
	for _, f := range findings {
		fs = append(fs, f.v)
	}
	rep := NewReport("diff", failOn, inputs, fs)
	rep.Summary.Ignored = ignored
	rep.LoRA, rep.Merged = out, info
	return rep, nil
}
