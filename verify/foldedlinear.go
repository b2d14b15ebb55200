package verify

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/ckptcheck/ckptcheck/internal/textfmt"
	"github.com/ckptcheck/ckptcheck/verify/internal/values"
)

// Scales folded between two Linears. AutoAWQ also folds a scale s into the
// Linear after another and its reciprocal into the first one's output rows
// (casper-hansen/AutoAWQ awq/quantize/scale.py at
// 0a6a6d025346304687ba69872168ef786fcccd95, scale_fc_fc:
// fc1.weight[-scales.size(0):].div_(scales.view(-1, 1)),
// fc2.weight.mul_(scales.view(1, -1))); for Llama and Qwen2 layers
// (awq/models/llama.py at 0aa4a596ca81e8890246712e909d9728b8ace8e8,
// awq/models/qwen2.py at 199eb523266f7c4a9a507a9a0b975501a337e087,
// get_layers_for_scaling) v_proj → o_proj when the two weights have one
// shape (no grouped KV heads), and up_proj → down_proj. So down_proj and
// o_proj differ from the published weights by a factor per column c_j, and
// up_proj and v_proj by a factor per row r_i on top of the one per column
// their norm holds: e ≈ diag(r)·p·diag(w).
//
// The first Linear is fitted per row, its published columns weighted by
// the norm's factors w_j = p_j / e_j (1 where the norm is unchanged), from
// its sums per row (values.RowStats): r_i = Σ w·p·e / Σ (w·p)², the
// residual Σ_i (Σ e² − (Σ w·p·e)² / Σ (w·p)²) judged against the
// encoding's bound as a column fit is. The second is fitted per column as
// a weight after a norm is. The two are folded when both residuals are
// within their bounds and c_i·r_i = 1: the energy-weighted RMS of
// c_i·r_i − 1 within the noise both fits leave on a factor, plus 2⁻⁷.
// Exactly the reciprocal, not up to a constant: a constant would change
// what the pair computes. Row factors that are all 1 within that noise are
// no fold between Linears: the first weight is then judged against its norm
// alone, and the second is not read again. The first Linear's bias, where it
// has one (Qwen's v_proj), is divided by the scale too: it is folded when
// its ratios e_i / p_i are the weight's row factors (RMS of their quotient
// − 1 within the noise on the factors plus 2⁻⁷) and the two Linears are.

// A linearFold is a pair of Linears of a block that AutoAWQ may fold a
// scale between; sameShape: only when their weights have one shape.
type linearFold struct {
	block, first, second string
	sameShape            bool
}

var linearFolds = []linearFold{
	{".self_attn.", "v_proj", "o_proj", true},
	{".mlp.", "up_proj", "down_proj", false},
	{".mlp.", "w3", "w2", false}, // experts named as Mixtral's, under .mlp.
}

// foldedNext is the Linear after weight name whose input columns may hold
// the reciprocal of a scale folded into name's output rows, or "".
func foldedNext(name string) string { return linearPartner(name, true) }

// foldedPrev is the Linear before weight name whose output rows may hold
// the reciprocal of a scale folded into name's input columns, or "".
func foldedPrev(name string) string { return linearPartner(name, false) }

func linearPartner(name string, next bool) string {
	for _, f := range linearFolds {
		from, to := f.first, f.second
		if !next {
			from, to = to, from
		}
		suffix := "." + from + ".weight"
		if i := strings.Index(name, f.block); i >= 0 && strings.HasSuffix(name, suffix) && len(name)-len(suffix) >= i+len(f.block)-1 {
			return strings.TrimSuffix(name, suffix) + "." + to + ".weight"
		}
	}
	return ""
}

// linearShapesFit reports whether a scale can be folded between the
// logical [out, in] weights first and second: first's rows are second's
// columns (and, for v_proj → o_proj, the shapes are one, as AutoAWQ asks).
func linearShapesFit(first, second *pair) bool {
	a, b := first.exp.t.Quant.Shape, second.exp.t.Quant.Shape
	if a[0] != b[1] {
		return false
	}
	for _, f := range linearFolds {
		if f.sameShape && strings.HasSuffix(first.key, "."+f.first+".weight") {
			return slices.Equal(a, b)
		}
	}
	return true
}

// rowFit is a weight's fit per row, its columns weighted by w.
type rowFit struct {
	factors    []float64 // r_i; NaN where the weighted published row is zero
	energy     []float64 // r_i² Σ (w·p)²: a row's share of the folded weight
	residual   float64   // relative L2 after the factors
	bound      float64   // the encoding's statistical bound against diag(r)·p·diag(w)
	cols       uint64
	rmin, rmax float64
	// explained: the residual is within the bound; bad: no fit at all;
	// unit: every factor is 1 within the noise the residual leaves.
	explained, bad, unit bool
}

// fitRows fits a factor per row to a pair's sums per row; pp is ‖p‖²
// unweighted and noise the relative L2 the steps imply against p.
func fitRows(r *values.RowStats, pp, noise float64, cols uint64) rowFit {
	f := rowFit{factors: make([]float64, len(r.PP)), energy: make([]float64, len(r.PP)), cols: cols,
		rmin: math.Inf(1), rmax: math.Inf(-1)}
	var folded, res float64
	for i := range r.PP {
		if r.PP[i] == 0 {
			f.factors[i] = math.NaN()
			res += r.EE[i]
			continue
		}
		k := r.PE[i] / r.PP[i]
		f.factors[i], f.energy[i] = k, k*k*r.PP[i]
		folded += f.energy[i]
		res += max(0, r.EE[i]-r.PE[i]*k)
		f.rmin, f.rmax = min(f.rmin, k), max(f.rmax, k)
	}
	if folded == 0 || pp == 0 || !(f.rmin > 0) {
		f.bad = true
		return f
	}
	f.residual = math.Sqrt(res / folded)
	f.bound = quantStatK * noise * math.Sqrt(pp/folded)
	f.explained = f.residual <= f.bound
	ones := make([]float64, len(f.factors))
	for i := range ones {
		ones[i] = 1
	}
	f.unit = reciprocalRMS(f.factors, f.energy, ones) <= foldedTolerance(f.residual, cols)
	return f
}

// reciprocalRMS is the RMS of f_j·g_j − 1 weighted by energy_j, over the
// j where f is a number; a g_j that is not one counts as an error of 1.
func reciprocalRMS(f, energy, g []float64) float64 {
	var sum, w float64
	for j, c := range f {
		if math.IsNaN(c) || j >= len(g) {
			continue
		}
		d := 1.0
		if !math.IsNaN(g[j]) {
			d = g[j]*c - 1
		}
		sum += energy[j] * d * d
		w += energy[j]
	}
	if w == 0 {
		return math.Inf(1)
	}
	return math.Sqrt(sum / w)
}

// normFactors are the weights a row fit gives a weight's columns: the
// factor p_j / e_j the norm before it was divided by, where the norm
// changed (0 where its sign did not survive, 1 where it is zero on both
// sides), else 1; nil when the norm does not fit the columns.
func normFactors(norm *values.ColumnStats, cols uint64) []float64 {
	w := make([]float64, cols)
	for j := range w {
		w[j] = 1
	}
	if norm == nil {
		return w
	}
	if uint64(len(norm.PP)) != cols {
		return nil
	}
	for j := range w {
		switch {
		case norm.PP[j] == 0 && norm.EE[j] == 0:
		case norm.PP[j] > 0 && norm.PE[j] > 0:
			w[j] = norm.PP[j] / norm.PE[j]
		default:
			w[j] = 0
		}
	}
	return w
}

// linearReciprocal is how far the second Linear's column factors are from
// the reciprocal of the first's row factors (nil first: all 1), and the
// tolerance: the noise both fits leave on a factor, plus 2⁻⁷.
func linearReciprocal(first *rowFit, second *columnFit) (rms, tol float64) {
	r := make([]float64, len(second.factors))
	for i := range r {
		r[i] = 1
	}
	tol = foldedTolerance(second.residual, second.rows)
	if first != nil {
		r = first.factors
		tol += quantStatK * first.residual / math.Sqrt(float64(max(first.cols, 1)))
	}
	return reciprocalRMS(second.factors, second.energy, r), tol
}

// firstVerdict is the verdict on a first Linear whose rows are not all 1:
// folded when the second holds their reciprocal; norm is the norm whose
// factors weighted its columns ("" where it is unchanged) and w those
// factors.
func firstVerdict(key, norm string, w []float64, row *rowFit, next string, second *columnFit) *foldVerdict {
	wmin, wmax := 1.0, 1.0
	if norm != "" {
		wmin, wmax = slices.Min(w), slices.Max(w)
	}
	rec, tol := math.Inf(1), 0.0
	if second != nil && !second.bad {
		rec, tol = linearReciprocal(row, second)
	}
	v := &foldVerdict{stats: FoldedStats{Norm: norm, Next: next, FactorMin: Float(wmin), FactorMax: Float(wmax),
		RowFactorMin: Float(row.rmin), RowFactorMax: Float(row.rmax), RelL2: Float(row.residual), RelL2Bound: Float(row.bound),
		Reciprocal: Float(rec), Tolerance: Float(tol)}}
	if second != nil && second.explained && rec <= tol {
		v.folded = true
		return v
	}
	what := fmt.Sprintf("a factor per output row (%s to %s) explains", textfmt.Float(row.rmin), textfmt.Float(row.rmax))
	if norm != "" {
		what = fmt.Sprintf("factors per output row (%s to %s) and per input column (the reciprocal of %s's) explain",
			textfmt.Float(row.rmin), textfmt.Float(row.rmax), norm)
	}
	v.why = fmt.Sprintf("; %s the difference (relative L2 %s after them, within %s), but %s does not hold the rows' reciprocal in its input columns (RMS of r·c − 1 %s > %s): not a folded scale",
		what, textfmt.Float(row.residual), textfmt.Float(row.bound), next, textfmt.Float(rec), textfmt.Float(tol))
	return v
}

// secondVerdict is the verdict on a second Linear whose columns fit:
// folded when the first's rows (nil: not a fit, all 1) hold their
// reciprocal.
func secondVerdict(prev string, first *rowFit, fit *columnFit) *foldVerdict {
	if first != nil && (first.bad || !first.explained) {
		first = nil
	}
	rec, tol := linearReciprocal(first, fit)
	v := &foldVerdict{stats: FoldedStats{Previous: prev, FactorMin: Float(fit.fmin), FactorMax: Float(fit.fmax),
		RelL2: Float(fit.residual), RelL2Bound: Float(fit.bound), Reciprocal: Float(rec), Tolerance: Float(tol)}}
	if first != nil && !first.unit && rec <= tol {
		v.folded = true
		return v
	}
	v.why = fmt.Sprintf("; a factor per input column (%s to %s) explains the difference (relative L2 %s after it, within %s), but %s does not hold its reciprocal in its output rows (RMS of r·c − 1 %s > %s): not a folded scale",
		textfmt.Float(fit.fmin), textfmt.Float(fit.fmax), textfmt.Float(fit.residual), textfmt.Float(fit.bound), prev,
		textfmt.Float(rec), textfmt.Float(tol))
	return v
}

// biasVerdict is the verdict on the bias of a first Linear whose fold with
// the second holds (row its fit per row): folded when the bias's ratios
// are the row factors; nil otherwise (judged as it is).
func biasVerdict(weight string, row *rowFit, bias *values.ColumnStats) *foldVerdict {
	if len(bias.PP) != len(row.factors) {
		return nil
	}
	q, energy, inv := make([]float64, len(bias.PP)), make([]float64, len(bias.PP)), make([]float64, len(bias.PP))
	qmin, qmax := math.Inf(1), math.Inf(-1)
	for i := range q {
		inv[i] = 1 / row.factors[i] // NaN stays NaN: an error of 1
		if q[i] = math.NaN(); bias.PP[i] > 0 {
			q[i] = bias.PE[i] / bias.PP[i]
			energy[i] = q[i] * q[i] * bias.PP[i]
			qmin, qmax = min(qmin, q[i]), max(qmax, q[i])
		}
	}
	rec, tol := reciprocalRMS(q, energy, inv), foldedTolerance(row.residual, row.cols)
	if !(rec <= tol) {
		return nil
	}
	return &foldVerdict{folded: true, stats: FoldedStats{BiasOf: weight, FactorMin: Float(qmin), FactorMax: Float(qmax),
		Reciprocal: Float(rec), Tolerance: Float(tol)}}
}
