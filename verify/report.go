package verify

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"github.com/ckptcheck/ckptcheck/checkpoint"
	"github.com/ckptcheck/ckptcheck/internal/textfmt"
)

// Schema names the JSON report format; renaming or removing a field makes a
// new version.
const Schema = "ckptcheck.report/v1"

// A Report is the outcome of one command: its inputs as resolved and what
// was found. Package report renders it; WriteJSON and ReadReport are its
// JSON form, which partitioned runs write and merge reads back.
type Report struct {
	Schema   string    `json:"schema"`
	Command  string    `json:"command"`
	OK       bool      `json:"ok"`
	FailOn   Severity  `json:"fail_on"`
	Inputs   []Input   `json:"inputs"`
	Summary  Summary   `json:"summary"`
	Findings []Finding `json:"findings"`
	// Values is the value comparison of diff --values.
	Values *ValueReport `json:"values,omitempty"`
	// LoRA is the merge proof of diff --lora.
	LoRA *LoRAReport `json:"lora,omitempty"`
	// Inspection is what inspect lists; its fields are inlined.
	*Inspection
	// Inspections are what inspect lists of a folder holding several
	// checkpoints (one per GGUF quantization), one for each, in the order
	// of Inputs; Inspection is then nil.
	Inspections []VariantInspection `json:"inspections,omitempty"`
	// Explanation is diff --explain's answer.
	Explanation *Explanation `json:"explanation,omitempty"`
	// Suppressed are the findings a baseline accepted (Baseline.Apply),
	// with its reasons; they do not count toward the verdict. Baseline
	// names the file the baseline came from.
	Suppressed []SuppressedFinding `json:"suppressed,omitempty"`
	Baseline   string              `json:"baseline,omitempty"`
	// Partition is set on the report of one partition of a run
	// (--partition), Merged on the report merge made of them.
	Partition *PartitionInfo `json:"partition,omitempty"`
	Merged    *MergeInfo     `json:"merged,omitempty"`
}

// An Input is one checkpoint a command read.
type Input struct {
	Side   Side   `json:"side,omitempty"`
	Path   string `json:"path"`
	Index  string `json:"index,omitempty"`
	Config string `json:"config,omitempty"`
	// Files are the shards opened; Refused the names an index gave that
	// were never opened (unsafe paths).
	Files   []string `json:"files"`
	Refused []string `json:"refused,omitempty"`
	Tensors int      `json:"tensors"`
	Adapter string   `json:"adapter,omitempty"`
	// Inferred describes the adapter when it was inferred ("infer").
	Inferred *InferredInput `json:"inferred,omitempty"`
	Variant  string         `json:"variant,omitempty"`
	// Hub is the repo id, revision as typed, and commit it resolved to.
	Hub *checkpoint.HubRef `json:"hub,omitempty"`
	// Remote is where a remote checkpoint was read from: the resolved
	// name and each file's size, ETag and LFS sha256 (never a signed URL).
	Remote *checkpoint.Remote `json:"remote,omitempty"`
}

// Summary counts findings per severity, those left out by --ignore, and
// those a baseline accepted (suppressed, listed in Report.Suppressed).
type Summary struct {
	Error      int `json:"error"`
	Warning    int `json:"warning"`
	Info       int `json:"info"`
	Ignored    int `json:"ignored,omitempty"`
	Suppressed int `json:"suppressed,omitempty"`
}

// NewReport builds a report and decides OK: no finding at or above failOn.
func NewReport(command string, failOn Severity, inputs []Input, findings []Finding) *Report {
	r := &Report{Schema: Schema, Command: command, FailOn: failOn, Inputs: inputs, Findings: findings}
	if r.Findings == nil {
		r.Findings = []Finding{}
	}
	if r.Inputs == nil {
		r.Inputs = []Input{}
	}
	r.Decide()
	return r
}

// ValuesReportInput is what NewValuesReport makes the report of diff
// --values from.
type ValuesReportInput struct {
	FailOn Severity
	Inputs []Input
	// Comparison is the diff, whose findings come first; Values its value
	// comparison.
	Comparison *Comparison
	Values     *ValueReport
	// Partition is the partition the values were compared for
	// (ValueOptions.Partition); the zero Partition for a whole run.
	Partition Partition
	// Fingerprint is the run's Comparison.Fingerprint, for Merge.
	Fingerprint string
	Ignores     []Ignore
}

// NewValuesReport is the report of diff --values: the diff's findings,
// then the values', less those the ignores silence (counted in
// Summary.Ignored). When the values were compared for a partition
// (ValueOptions.Partition, even 0/1), it is that partition's report, for
// Merge: the structural findings are computed in every partition but
// carried only in partition 0's, and Partition records the partition, the
// fingerprint, the ignores and the work covered.
func NewValuesReport(in ValuesReportInput) *Report {
	d, values, p, ignores := in.Comparison, in.Values, in.Partition, in.Ignores
	var structural []Finding
	if p.Count == 0 || p.Index == 0 {
		structural = d.Findings
	}
	structural, ignoredS := ApplyIgnores(structural, ignores)
	valueFs, ignoredV := ApplyIgnores(values.Findings, ignores)
	r := NewReport("diff", in.FailOn, in.Inputs, append(slices.Clip(structural), valueFs...))
	r.Values = values
	r.Summary.Ignored = ignoredS + ignoredV
	if p.Count == 0 {
		return r
	}
	r.Partition = newPartitionInfo(p, in.Fingerprint, len(structural), values.Items, values.Covered, ignores)
	return r
}

// Decide counts the findings per severity and sets OK.
func (r *Report) Decide() {
	ignored := r.Summary.Ignored
	r.Summary = Summary{Ignored: ignored, Suppressed: len(r.Suppressed)}
	r.OK = true
	for _, f := range r.Findings {
		switch f.Severity {
		case Error:
			r.Summary.Error++
		case Warning:
			r.Summary.Warning++
		default:
			r.Summary.Info++
		}
		if f.Severity >= r.FailOn {
			r.OK = false
		}
	}
}

// DescribeInput is a checkpoint as a report lists it.
func DescribeInput(c *checkpoint.Checkpoint, side Side) Input {
	in := Input{Side: side, Path: c.Path, Tensors: c.NumTensors(), Files: []string{}, Hub: c.Hub, Variant: c.Variant, Remote: c.Remote}
	if c.Index != nil {
		in.Index = c.Index.Path
	}
	if c.Config != nil {
		in.Config = c.Config.Path
	}
	for _, s := range c.Shards {
		if s.Status == checkpoint.ShardUnsafe {
			in.Refused = append(in.Refused, s.Name)
		} else if !s.Status.Absent() {
			in.Files = append(in.Files, s.Name)
		}
	}
	return in
}

// WriteJSON writes the report as one indented JSON document.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// ReadReport reads a report written by WriteJSON, refusing another schema.
func ReadReport(rd io.Reader) (*Report, error) {
	var r Report
	dec := json.NewDecoder(rd)
	dec.UseNumber() // details are any: keep their numbers exact (uint64 above 2^53)
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("not a ckptcheck JSON report: %v", textfmt.JSONError(err))
	}
	if r.Schema != Schema {
		return nil, fmt.Errorf("report schema %q, want %q", r.Schema, Schema)
	}
	return &r, nil
}
