package verify

import (
	"fmt"
	"math"
	"slices"

	"github.com/ckptcheck/ckptcheck/adapter"
	"github.com/ckptcheck/ckptcheck/internal/textfmt"
	"github.com/ckptcheck/ckptcheck/quant"
	"github.com/ckptcheck/ckptcheck/verify/internal/values"
)

// Values of quantized weights. A weight one side stores quantized and the
// other in another encoding (a plain dtype, or another codec) is decoded
// through its codec in the value engine's streaming pass, and judged by
// the encoding's own bound, derived per tensor from the steps it stores
// (see values.Stepper):
//
//   - round-to-nearest schemes (FP8, NVFP4, MXFP4, int RTN, NF4…):
//     elementwise, every |e − p| within half a step of its element, widened
//     by values.StepMargin; with two quantized sides, the sum of both half
//     steps;
//   - error-compensating or scale-folding schemes (GPTQ, AWQ): GPTQ moves
//     elements further than half a step to cancel the layer's output error,
//     AWQ folds activation scales, so the tensor is judged statistically:
//     relative L2 ≤ quantStatK · √(Σ step² / 12) / ‖p‖, the noise uniform
//     rounding to the steps implies.
//
// A tolerance given on the command line (--atol, --rtol, a policy rule)
// replaces the encoding's bound. A codec that does not say its steps is
// compared and its numbers reported, but not judged.

// quantStatK is the factor of the statistical bound: GPTQ's compensation
// typically leaves 1–1.5 times the rounding noise; 3 leaves room for
// outlier channels and still fails a scale off by a factor of two.
const quantStatK = 3

// A quantPair is what a pair compared through codecs needs to be judged.
type quantPair struct {
	statistical bool
}

// QuantStats is how a quantized weight fared against its encoding's bound.
type QuantStats struct {
	// Bound is "elementwise" (half a step a value) or "statistical"
	// (relative L2 against the steps' noise); "none" when the codec does
	// not say its steps.
	Bound string `json:"bound"`
	// Outside counts the elements beyond half a step (elementwise).
	Outside uint64 `json:"outside,omitempty"`
	// MaxStepRatio is the largest |e − p| in half steps, at MaxStepAt.
	MaxStepRatio Float    `json:"max_step_ratio"`
	MaxStepAt    []uint64 `json:"max_step_at,omitempty"`
	// NoiseRelL2 is the relative L2 the steps imply; RelL2Bound the
	// statistical bound, quantStatK times it.
	NoiseRelL2 Float `json:"noise_rel_l2"`
	RelL2Bound Float `json:"rel_l2_bound,omitempty"`
	// EncodingRelL2, under ExpectDerived, is the encoding's share of the
	// drift bound: the relative L2 its steps allow (quantStatK times the
	// noise for a statistical scheme, the half steps' L2 for a
	// round-to-nearest one); RelL2Bound is then the drift bound plus it.
	EncodingRelL2 Float `json:"encoding_rel_l2,omitempty"`
	// Within says the weight is within its bound.
	Within bool `json:"within"`
}

// decodes reports a quantized weight whose codec decodes, with every part
// the codec reads and a logical shape the headers say.
func decodes(t adapter.Tensor) bool {
	q := t.Quant
	if q == nil || q.Shape == nil || len(q.Parts) != len(q.Codec.Parts()) {
		return false
	}
	if _, ok := q.Codec.(*quant.Unsupported); ok {
		return false
	}
	if _, ok := q.Codec.(quant.MXFP4); ok && len(q.Shape) > 3 {
		return false // transformers swaps dimensions 1 and 2: no matrix transpose the engine reads
	}
	if _, ok := q.Codec.(values.ColumnBander); t.Transposed && isGGML(t) && !ok {
		return false // read transposed (gpt-oss's ffn_down_exps): the codec reads no band of its columns
	}
	if t.Interleave != nil && !isGGML(t) {
		return false // the data interleaved, its companions not: no layout the engine reads
	}
	if slices.ContainsFunc(t.Segments, func(s adapter.Segment) bool { return s.Transposed }) {
		return false // tiles read transposed: only plain tensors are read so
	}
	return !slices.Contains(q.Parts, "")
}

// logicalShape is a tensor's shape in logical elements.
func logicalShape(t adapter.Tensor) []uint64 {
	if t.Quant != nil {
		return t.Quant.Shape
	}
	return t.Shape
}

// comparableQuant reports a pair with a quantized side that the engine
// decodes and compares: each side decodes (a real plain dtype, or a codec
// that decodes), the logical shapes agree, and they are not stored alike
// (those compare byte for byte).
func comparableQuant(p, e adapter.Tensor) bool {
	if (p.Quant == nil && e.Quant == nil) || sameEncoding(p, e) {
		return false
	}
	for _, t := range []adapter.Tensor{p, e} {
		if t.Quant == nil && (!t.DType.IsFloat() || !t.DType.Decodable() || t.DType.Lanes() != 1 || t.Transposed) {
			return false
		}
		if t.Quant != nil && !decodes(t) {
			return false
		}
	}
	return slices.Equal(logicalShape(p), logicalShape(e))
}

// quantOperands marks a pair to compare through its codecs when it is one,
// and names its encoding.
func (d *Comparison) quantOperands(pr *pair) {
	p, e := pr.pub.t, pr.exp.t
	if !comparableQuant(p, e) {
		return
	}
	pr.quant = &quantPair{}
	pr.stats.Elements = numElements(logicalShape(p))
	var names []string
	for i, o := range []*operand{&pr.pub, &pr.exp} {
		if o.t.Quant == nil {
			continue
		}
		names = append(names, o.t.Quant.Codec.String())
		if s := d.quant[i].scheme; (s != nil && compensating(s.Name())) || codecCompensates(o.t.Quant.Codec) {
			pr.quant.statistical = true
		}
		for _, c := range o.t.Quant.Companions {
			if why := (&operand{t: c, src: o.src}).unreadable(); why != "" {
				pr.stats.skip(why)
			}
		}
	}
	pr.stats.Encoding = names[0]
	if len(names) == 2 {
		pr.stats.Encoding = names[0] + " → " + names[1]
	}
}

// compensating reports the schemes whose quantizers move elements beyond
// half a step: GPTQ's error compensation, AWQ's folded activation scales.
func compensating(scheme string) bool { return scheme == "gptq" || scheme == "awq" }

// codecCompensates asks a codec whether its encoding is judged
// statistically; a codec says so by implementing
// interface{ ErrorCompensated() bool }.
func codecCompensates(c quant.Codec) bool {
	ec, ok := c.(interface{ ErrorCompensated() bool })
	return ok && ec.ErrorCompensated()
}

// codecOperand is a quantized operand for the engine: its codec, each
// part's segments (the data's, then each companion's, as the codec lists
// them), and whether the codec's matrices are the transpose of the logical
// ones (gpt-oss's MXFP4 experts); the engine asks the codec for its steps
// (values.Stepper).
func codecOperand(o *operand, segments func(adapter.Tensor, []Source) []values.Segment) values.Operand {
	q := o.t.Quant
	parts := make([][]values.Segment, len(q.Parts))
	for i, name := range q.Parts {
		if i == 0 {
			parts[i] = segments(o.t, o.src)
			continue
		}
		if k := slices.IndexFunc(q.Companions, func(c adapter.Tensor) bool { return c.Name == name }); k >= 0 {
			parts[i] = segments(q.Companions[k], o.src)
		}
	}
	// A GGUF block-typed tensor an adapter reads transposed (gpt-oss's
	// ffn_down_exps) is the codec's stored matrices transposed too.
	transposed := storedTransposed(q.Codec, q.Shape) || o.t.Transposed && isGGML(o.t)
	// Interleaved (gpt-oss's gate_up_proj from ffn_gate_exps and
	// ffn_up_exps), a GGUF block-typed tensor's one part is.
	return values.Operand{Codec: q.Codec, Parts: parts, Shape: q.Shape, Transposed: transposed, Interleave: o.t.Interleave}
}

// judgeQuant judges a pair compared through codecs against its encoding's
// bound, and counts it.
func (rep *ValueReport) judgeQuant(pr *pair) {
	s := &pr.stats
	st := pr.engine.Stats.Steps
	q := &QuantStats{Bound: "none", MaxStepRatio: Float(math.NaN()), NoiseRelL2: Float(math.NaN())}
	s.Quantization = q
	if s.reinitialized() {
		rep.Findings = append(rep.Findings, valueFindings(s)...)
	}
	if s.NonFinite > 0 {
		rep.Findings = append(rep.Findings, Finding{Code: CodeNonFinite, Severity: Error, Side: Exported, Key: s.Key,
			Message: fmt.Sprintf("%s NaN or Inf values where the published tensor is finite", textfmt.Thousands(s.NonFinite))})
	}
	if st == nil {
		rep.WithinTolerance++
		rep.Findings = append(rep.Findings, Finding{Code: CodeQuantizedUnsupported, Severity: Warning, Key: s.Key,
			Message: fmt.Sprintf("%s decoded and compared (relative L2 %s, cosine %s), but its codec states no steps: there is no encoding bound to judge it by; give --atol/--rtol",
				s.Encoding, textfmt.Float(float64(s.RelL2)), textfmt.Float(float64(s.Cosine)))})
		return
	}
	q.Outside, q.MaxStepRatio, q.MaxStepAt, q.NoiseRelL2 = st.Outside, Float(st.MaxRatio), st.MaxAt, Float(st.NoiseRelL2)
	var msg string
	if pr.quant.statistical {
		q.Bound = "statistical"
		q.RelL2Bound = Float(quantStatK * st.NoiseRelL2)
		q.Within = float64(s.RelL2) <= float64(q.RelL2Bound) || s.RelL2 == 0
		msg = fmt.Sprintf("%s: relative L2 %s against the other side, beyond the encoding's bound %s (%d × the noise %s its steps imply); cosine %s",
			s.Encoding, textfmt.Float(float64(s.RelL2)), textfmt.Float(float64(q.RelL2Bound)), quantStatK,
			textfmt.Float(st.NoiseRelL2), textfmt.Float(float64(s.Cosine)))
	} else {
		q.Bound = "elementwise"
		q.Within = st.Outside == 0
		msg = fmt.Sprintf("%s: %s of %s elements beyond half a quantization step (+%s) of the other side; worst %s half steps at %s, |Δ| %s; relative L2 %s (the steps imply %s)",
			s.Encoding, textfmt.Thousands(st.Outside), textfmt.Thousands(s.Elements), textfmt.Float(values.StepMargin),
			textfmt.Float(st.MaxRatio), coords(st.MaxAt), textfmt.Float(float64(s.MaxAbsDiff)),
			textfmt.Float(float64(s.RelL2)), textfmt.Float(st.NoiseRelL2))
	}
	if q.Within {
		rep.WithinTolerance++
		return
	}
	rep.Mismatched++
	rep.Findings = append(rep.Findings, Finding{Code: CodeQuantizationError, Severity: Error, Key: s.Key, Message: msg,
		Got:      map[string]any{"rel_l2": s.RelL2, "outside": st.Outside, "max_step_ratio": Float(st.MaxRatio)},
		Expected: map[string]any{"bound": q.Bound, "rel_l2_bound": q.RelL2Bound, "noise_rel_l2": Float(st.NoiseRelL2)}})
}

// quantDerived gives a pair compared through codecs, under ExpectDerived,
// the encoding's share of its drift bound (DESIGN.md: "drift bound plus
// the encoding bound"; with two quantized sides the steps are both
// sides'). A round-to-nearest encoding leaves every element within half
// its step, so the error's L2 is at most √(Σ (step/2)²) = √3 · the noise
// per side (the half steps of two sides add elementwise: √2 more); a
// statistical scheme is allowed quantStatK times the noise. A codec that
// states no steps adds nothing.
func quantDerived(pr *pair) {
	s := &pr.stats
	q := &QuantStats{Bound: "none", MaxStepRatio: Float(math.NaN()), NoiseRelL2: Float(math.NaN())}
	s.Quantization = q
	st := pr.engine.Stats.Steps
	if st == nil || !(st.NoiseRelL2 >= 0) || math.IsInf(st.NoiseRelL2, 0) {
		return
	}
	q.Outside, q.MaxStepRatio, q.MaxStepAt, q.NoiseRelL2 = st.Outside, Float(st.MaxRatio), st.MaxAt, Float(st.NoiseRelL2)
	enc := quantStatK * st.NoiseRelL2
	if !pr.quant.statistical {
		sides := 0.0
		for _, t := range []adapter.Tensor{pr.pub.t, pr.exp.t} {
			if t.Quant != nil {
				sides++
			}
		}
		enc = math.Sqrt(3*sides) * (1 + values.StepMargin) * st.NoiseRelL2
	}
	b := DefaultDrift
	if s.Bound != nil {
		b = *s.Bound
	}
	q.Bound, q.EncodingRelL2, q.RelL2Bound = "statistical", Float(enc), Float(b.plusEncoding(enc).MaxRelL2)
}
