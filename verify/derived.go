package verify

import (
	"fmt"
	"math"
	"strings"

	"github.com/ckptcheck/ckptcheck/internal/textfmt"
)

// Expect says what diff --values asks of the exported values.
type Expect string

const (
	// ExpectEqual asks for the published values, within the tolerance:
	// a conversion, a re-shard, an adapter's export.
	ExpectEqual Expect = "equal"
	// ExpectDerived asks whether the values were trained from the
	// published ones: every tensor within its drift bound of them.
	ExpectDerived Expect = "derived"
)

// ParseExpect reads "equal" or "derived"; "" is ExpectEqual.
func ParseExpect(s string) (Expect, error) {
	switch e := Expect(s); e {
	case "", ExpectEqual:
		return ExpectEqual, nil
	case ExpectDerived:
		return e, nil
	}
	return "", fmt.Errorf("expect %q: want equal or derived", s)
}

// Derived reports ExpectDerived.
func (e Expect) Derived() bool { return e == ExpectDerived }

// A DriftBound is how far training may move a tensor under ExpectDerived:
// its relative L2 change ‖e − p‖ / ‖p‖ at most MaxRelL2 and its cosine
// similarity to the published tensor at least MinCosine.
type DriftBound struct {
	MaxRelL2  float64 `json:"max_rel_l2"`
	MinCosine float64 `json:"min_cosine"`
}

// DefaultDrift is the drift bound when the policy sets none: a full
// fine-tune moves a weight matrix by ~1e-3 to ~1e-1 relative; a tensor
// moved by more than a quarter of its norm, or turned away from the
// published direction, was not trained from it in any usual sense.
var DefaultDrift = DriftBound{MaxRelL2: 0.25, MinCosine: 0.95}

// with is the bound with the fields that are set replaced.
func (b DriftBound) with(maxRelL2, minCosine *float64) DriftBound {
	if maxRelL2 != nil {
		b.MaxRelL2 = *maxRelL2
	}
	if minCosine != nil {
		b.MinCosine = *minCosine
	}
	return b
}

func (b DriftBound) String() string {
	return fmt.Sprintf("relative L2 ≤ %s, cosine ≥ %s", textfmt.Float(b.MaxRelL2), textfmt.Float(b.MinCosine))
}

// plusEncoding is the bound widened by a lossy encoding whose error is at
// most enc relative to the published norm (see quantDerived): a quantized
// fine-tune Q(t) of a trained t is within ‖t − p‖ + ‖Q(t) − t‖ of the
// published p, so the relative L2 bounds add, and the angles do: the
// encoding turns the tensor by at most asin(enc).
func (b DriftBound) plusEncoding(enc float64) DriftBound {
	if !(enc > 0) {
		return b
	}
	angle := math.Acos(max(-1, min(1, b.MinCosine))) + math.Asin(min(1, enc))
	b.MaxRelL2 += enc
	b.MinCosine = math.Cos(min(math.Pi, angle))
	return b
}

// exceeded says how the statistics break the bound, or "". A statistic
// that is undefined (relative L2 against a published zero tensor, the
// cosine of a zero tensor) does not judge: a zero-initialised bias that
// training moved has no relative drift.
func (b DriftBound) exceeded(s *TensorStats) string {
	var why []string
	if s.RelL2.Defined() && float64(s.RelL2) > b.MaxRelL2 {
		why = append(why, fmt.Sprintf("relative L2 %s > %s", textfmt.Float(float64(s.RelL2)), textfmt.Float(b.MaxRelL2)))
	}
	if s.Cosine.Defined() && float64(s.Cosine) < b.MinCosine {
		why = append(why, fmt.Sprintf("cosine %s < %s", textfmt.Float(float64(s.Cosine)), textfmt.Float(b.MinCosine)))
	}
	return strings.Join(why, ", ")
}

// derivedFindings judges one compared tensor under ExpectDerived:
// unrelated values, values changed beyond the drift bound, and NaN or Inf
// where the published tensor is finite fail; the element tolerance does
// not judge. A side decoded through a lossy codec widens the bound by the
// encoding's (QuantStats.EncodingRelL2).
func derivedFindings(s *TensorStats) []Finding {
	var out []Finding
	b := DefaultDrift
	if s.Bound != nil {
		b = *s.Bound
	}
	expected := map[string]any{}
	if q := s.Quantization; q != nil && q.EncodingRelL2.Defined() && q.EncodingRelL2 > 0 {
		b = b.plusEncoding(float64(q.EncodingRelL2))
		expected["encoding_rel_l2"] = q.EncodingRelL2
		expected["encoding"] = s.Encoding
	}
	expected["max_rel_l2"], expected["min_cosine"] = b.MaxRelL2, b.MinCosine
	switch why := b.exceeded(s); {
	case s.reinitialized():
		out = append(out, reinitializedFinding(s))
	case why != "":
		if enc, ok := expected["encoding_rel_l2"]; ok {
			why += fmt.Sprintf(" (the drift bound widened by %s's own bound, relative L2 %s)", s.Encoding, textfmt.Float(float64(enc.(Float))))
		}
		out = append(out, Finding{Code: CodeDriftExcessive, Severity: Error, Key: s.Key,
			Message: fmt.Sprintf("related to the published values but changed more than training does: %s; worst |Δ| %s at %s (published %s, exported %s)",
				why, textfmt.Float(float64(s.MaxAbsDiff)), coords(s.MaxAt), textfmt.Float(float64(s.PublishedAt)), textfmt.Float(float64(s.ExportedAt))),
			Got:      map[string]any{"rel_l2": s.RelL2, "cosine": s.Cosine, "max_abs_diff": s.MaxAbsDiff},
			Expected: expected})
	}
	if s.NonFinite > 0 {
		out = append(out, nonFiniteFinding(s))
	}
	return out
}

// valuesEqual reports a compared tensor whose values are the published
// ones: bit-identical, or equal in other bytes (an exact upcast).
func (s *TensorStats) valuesEqual() bool {
	return s.Skipped == "" && (s.BitIdentical || (s.Mismatches == 0 && s.MaxAbsDiff == 0 && s.NonFinite == 0 && s.NonFiniteAt == nil))
}

// notTrained is the warning, under ExpectDerived, that every compared
// tensor holds the published values: no training reached the export.
func notTrained(tensors []TensorStats) (Finding, bool) {
	n := 0
	for i := range tensors {
		s := &tensors[i]
		if s.Skipped != "" {
			continue
		}
		if !s.valuesEqual() {
			return Finding{}, false
		}
		n++
	}
	if n == 0 {
		return Finding{}, false
	}
	return Finding{Code: CodeNotTrained, Severity: Warning,
		Message: fmt.Sprintf("all %s hold the published values: expected a model trained from them, got a copy (the wrong checkpoint exported, or training never updated the weights)",
			textfmt.Plural(n, "compared tensor"))}, true
}
