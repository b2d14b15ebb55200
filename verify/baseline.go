package verify

import (
	"fmt"

	"github.com/ckptcheck/ckptcheck/adapter"
)

// A Baseline is a team's list of accepted findings (kept in the repository,
// in .ckptcheck.yaml): findings it matches are suppressed, still reported
// with the reason, and do not count toward the verdict.
type Baseline struct {
	// Source names where the baseline came from, for reports.
	Source   string
	Accepted []*Accepted
}

// An Accepted entry matches findings by code and, optionally, by key, file
// (globs in the project's glob dialect, adapter.CompileGlob) and side.
type Accepted struct {
	Code Code
	// Key and File are globs; "" matches anything.
	Key, File string
	// Side is "published", "exported", or "" for either.
	Side Side
	// Reason says why the finding is accepted; it is required.
	Reason string

	key, file *adapter.Glob
}

// NewAccepted checks and compiles a baseline entry: the code must be a known
// one, the side published, exported or empty, the reason not empty.
func NewAccepted(code Code, key, file string, side Side, reason string) (*Accepted, error) {
	if _, ok := DocOf(code); !ok {
		return nil, fmt.Errorf("unknown finding code %q (ckptcheck codes lists them)", code)
	}
	if side != "" && side != Published && side != Exported {
		return nil, fmt.Errorf("side %q: want published or exported", side)
	}
	if reason == "" {
		return nil, fmt.Errorf("accepting %s needs a reason", code)
	}
	a := &Accepted{Code: code, Key: key, File: file, Side: side, Reason: reason}
	if key != "" {
		a.key = adapter.CompileGlob(key)
	}
	if file != "" {
		a.file = adapter.CompileGlob(file)
	}
	return a, nil
}

// Matches reports whether the entry accepts f. A summary finding without a
// key matches a key glob when every key it lists does.
func (a *Accepted) Matches(f *Finding) bool {
	if f.Code != a.Code || (a.Side != "" && f.Side != a.Side) {
		return false
	}
	if a.file != nil && !a.file.Match(f.File) {
		return false
	}
	if a.key == nil {
		return true
	}
	if f.Key == "" && len(f.Keys) > 0 {
		for _, k := range f.Keys {
			if !a.key.Match(k) {
				return false
			}
		}
		return true
	}
	return a.key.Match(f.Key)
}

// A SuppressedFinding is a finding a baseline accepted, with its reason.
type SuppressedFinding struct {
	Finding
	Reason string `json:"reason"`
}

// Apply moves the findings the baseline accepts from r.Findings to
// r.Suppressed (the first matching entry gives the reason) and decides the
// verdict again. A nil Baseline accepts nothing.
func (b *Baseline) Apply(r *Report) {
	if b == nil || len(b.Accepted) == 0 {
		return
	}
	kept := r.Findings[:0:0]
	for i := range r.Findings {
		f := &r.Findings[i]
		var by *Accepted
		for _, a := range b.Accepted {
			if a.Matches(f) {
				by = a
				break
			}
		}
		if by == nil {
			kept = append(kept, *f)
			continue
		}
		r.Suppressed = append(r.Suppressed, SuppressedFinding{Finding: *f, Reason: by.Reason})
	}
	r.Findings = kept
	if r.Baseline == "" {
		r.Baseline = b.Source
	}
	r.Decide()
}
