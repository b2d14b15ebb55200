package verify

import (
	"fmt"
)

// Severity orders findings; --fail-on compares against it.
type Severity int

const (
	Info Severity = iota
	Warning
	Error
	// Never is a threshold above every severity: --fail-on never.
	Never
)

func (s Severity) String() string {
	switch s {
	case Info:
		return "info"
	case Warning:
		return "warning"
	case Error:
		return "error"
	case Never:
		return "never"
	}
	return fmt.Sprintf("Severity(%d)", int(s))
}

// ParseSeverity parses "info", "warning", "error" or "never".
func ParseSeverity(s string) (Severity, error) {
	for _, sev := range []Severity{Info, Warning, Error, Never} {
		if sev.String() == s {
			return sev, nil
		}
	}
	return 0, fmt.Errorf("unknown severity %q (want error, warning, info or never)", s)
}

// MarshalText writes the severity's name.
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a severity's name.
func (s *Severity) UnmarshalText(b []byte) error {
	v, err := ParseSeverity(string(b))
	*s = v
	return err
}

// Side is a side of a diff.
type Side string

// The two sides of a diff.
const (
	Published Side = "published"
	Exported  Side = "exported"
	// SideAdapter is the adapter of diff --lora, the third input.
	SideAdapter Side = "adapter"
)

// A Finding is one thing a check found: a stable code, a severity, where
// (the tensor key in HF naming, the file, the side of a diff) and a one-line
// message, with details where they help.
type Finding struct {
	Code     Code     `json:"code"`
	Severity Severity `json:"severity"`
	Side     Side     `json:"side,omitempty"`
	Key      string   `json:"key,omitempty"`
	// Physical is the tensor's name in the file when an adapter renamed it.
	Physical string `json:"physical,omitempty"`
	File     string `json:"file,omitempty"`
	Message  string `json:"message"`

	// Keys lists the tensors a summary finding is about.
	Keys []string `json:"keys,omitempty"`

	// Published, Exported, Expected and Got are the details of a
	// comparison, each a JSON value. A check sets them to Go values that
	// encode as JSON: shapes as []uint64 (a JSON array of integers), dtypes
	// as tensorfile.DType (a string such as "BF16"), sizes and counts as
	// integers, digests as "sha256:…" strings, config and tokenizer values
	// as the JSON they were read from, value statistics as a map of names
	// to numbers (value_mismatch: "mismatches", "max_abs_diff", "rel_l2";
	// reinitialized: "cosine", "rel_l2"). A report read back by ReadReport
	// holds what encoding/json decodes with UseNumber: string, json.Number,
	// bool, nil, []any or map[string]any, so integers above 2^53 survive
	// exactly. Compare them by their JSON encoding, not by Go type.
	Published any `json:"published,omitempty"`
	Exported  any `json:"exported,omitempty"`
	Expected  any `json:"expected,omitempty"`
	Got       any `json:"got,omitempty"`
}

// String is the finding on one line, for logs and tests; reports render
// findings through package report.
func (f Finding) String() string {
	s := f.Severity.String() + " " + string(f.Code)
	if f.Side != "" {
		s += " [" + string(f.Side) + "]"
	}
	if f.File != "" {
		s += " " + f.File
	}
	if f.Key != "" {
		s += " " + f.Key
	}
	return s + ": " + f.Message
}
