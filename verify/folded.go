package verify

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/ckptcheck/ckptcheck/internal/textfmt"
	"github.com/ckptcheck/ckptcheck/verify/internal/values"
)

// Folded scales. AWQ and SmoothQuant move a per-input-channel activation
// scale s into the weights: a Linear after a norm becomes W·diag(s) and
// the norm's weight (and bias) is divided by s (casper-hansen/AutoAWQ
// awq/quantize/scale.py at 0a6a6d025346304687ba69872168ef786fcccd95,
// scale_ln_fcs: ln.weight.div_(scales), fc.weight.mul_(scales.view(1, -1));
// for Llama-like layers awq/models/*.py get_layers_for_scaling folds
// input_layernorm into q/k/v_proj and post_attention_layernorm into
// gate/up_proj). The model computes the same function, but each such weight
// differs from the published one by a factor per column, and the norm by
// its reciprocal: judged as they are, both fail.
//
// So a quantized weight that fails its encoding's bound, or the norm before
// it that fails value_mismatch, is looked at again in a second pass that
// sums every column (values.ColumnStats): the factor of column j is
// c_j = Σ p·e / Σ p², the residual after taking it out is
// Σ_j (Σe² − (Σp·e)² / Σp²), and the norm's own ratio r_j = e_j / p_j.
// The scale is folded when the residual is within the encoding's
// statistical bound against the folded published weight p·diag(c), and
// the norm holds the reciprocal: the energy-weighted RMS of r_j·c_j − 1 is
// within foldedTolerance. Both are then reported (quantized_scale_folded,
// info) and counted within their bound; a per-column factor the norm does
// not undo is still a quantization_error, saying so.
//
// Not covered yet: a fold into a preceding Linear (AutoAWQ's v_proj →
// o_proj and up_proj → down_proj, scale_fc_fc: rows of the first divided,
// columns of the second multiplied), which leaves a factor per row and per
// column on up_proj; those still fail. Only --expect equal with the
// default bound looks for folds, and only on a quantized exported side.

// foldedNorm is the norm whose weight holds the reciprocal of a scale
// folded into weight name's input channels, or "": input_layernorm before
// self_attn.{q,k,v}_proj, post_attention_layernorm before mlp.{gate,up}_proj
// (experts' included).
func foldedNorm(name string) string {
	for _, f := range []struct{ block, norm string }{
		{".self_attn.", "input_layernorm.weight"},
		{".mlp.", "post_attention_layernorm.weight"},
	} {
		i := strings.Index(name, f.block)
		if i < 0 {
			continue
		}
		proj := name[strings.LastIndex(name, ".")+1:]
		if proj != "weight" {
			return ""
		}
		base := strings.TrimSuffix(name, ".weight")
		base = base[strings.LastIndex(base, ".")+1:]
		inputs := []string{"q_proj", "k_proj", "v_proj"}
		if f.block == ".mlp." {
			inputs = []string{"gate_proj", "up_proj", "w1", "w3"}
		}
		if slices.Contains(inputs, base) {
			return name[:i+1] + f.norm
		}
		return ""
	}
	return ""
}

// foldedTolerance is how far, as an RMS over columns weighted by their
// energy, r_j·c_j may be from 1: the noise the residual leaves on each
// column's factor (quantStatK times the residual over √rows), and the
// rounding of the norm's dtype (at most 2⁻⁸ relative for BF16; 2⁻⁷ leaves
// room for the factor's own rounding before the division).
func foldedTolerance(residual float64, rows uint64) float64 {
	return quantStatK*residual/math.Sqrt(float64(max(rows, 1))) + 1.0/128
}

// FoldedStats are the numbers of a folded scale: on a weight, the factors
// per column and the residual against the folded published weight; on a
// norm, the weights whose scales it holds.
type FoldedStats struct {
	// Norm is the norm holding the reciprocal (on a weight); Weights the
	// weights folded (on a norm).
	Norm    string   `json:"norm,omitempty"`
	Weights []string `json:"weights,omitempty"`
	// FactorMin and FactorMax are the range of the per-column factors.
	FactorMin Float `json:"factor_min"`
	FactorMax Float `json:"factor_max"`
	// RelL2 is the residual ‖e − p·diag(c)‖ / ‖p·diag(c)‖ and RelL2Bound
	// the encoding's bound it is judged by (on a weight).
	RelL2      Float `json:"rel_l2,omitempty"`
	RelL2Bound Float `json:"rel_l2_bound,omitempty"`
	// Reciprocal is the RMS of r_j·c_j − 1 against the norm, within
	// Tolerance when the norm holds the reciprocal.
	Reciprocal Float `json:"reciprocal_rms"`
	Tolerance  Float `json:"reciprocal_tolerance"`
}

// columnFit is a weight's per-column fit.
type columnFit struct {
	factors        []float64 // c_j; NaN where the published column is zero
	residual       float64   // relative L2 after the factors
	bound          float64   // the encoding's statistical bound against p·diag(c)
	rows           uint64
	energy         []float64 // c_j² Σp²: a column's share of ‖p·diag(c)‖²
	fmin, fmax     float64
	explained, bad bool // the residual is within the bound; bad: no fit at all
}

// fitColumns fits a factor per column to a pair's sums; noise is the
// relative L2 its steps imply against the published weight.
func fitColumns(c *values.ColumnStats, noise float64, rows uint64) columnFit {
	f := columnFit{factors: make([]float64, len(c.PP)), energy: make([]float64, len(c.PP)), rows: rows,
		fmin: math.Inf(1), fmax: math.Inf(-1)}
	var pp, folded, res float64
	for j := range c.PP {
		pp += c.PP[j]
		if c.PP[j] == 0 {
			f.factors[j] = math.NaN()
			res += c.EE[j]
			continue
		}
		k := c.PE[j] / c.PP[j]
		f.factors[j], f.energy[j] = k, k*k*c.PP[j]
		folded += f.energy[j]
		res += max(0, c.EE[j]-c.PE[j]*k)
		f.fmin, f.fmax = min(f.fmin, k), max(f.fmax, k)
	}
	if folded == 0 || pp == 0 || !(f.fmin > 0) {
		f.bad = true // a zero weight, or a factor ≤ 0: not a scale
		return f
	}
	f.residual = math.Sqrt(res / folded)
	f.bound = quantStatK * noise * math.Sqrt(pp/folded)
	f.explained = f.residual <= f.bound
	return f
}

// reciprocal is the energy-weighted RMS of r_j·c_j − 1, r_j the norm's
// ratio e_j / p_j from its sums.
func (f *columnFit) reciprocal(norm *values.ColumnStats) float64 {
	var sum, w float64
	for j, c := range f.factors {
		if math.IsNaN(c) || j >= len(norm.PP) {
			continue
		}
		d := 1.0 // a zero published norm element cannot be undone
		if norm.PP[j] > 0 {
			d = norm.PE[j]/norm.PP[j]*c - 1
		}
		sum += f.energy[j] * d * d
		w += f.energy[j]
	}
	if w == 0 {
		return math.Inf(1)
	}
	return math.Sqrt(sum / w)
}

// A foldVerdict is what the second pass found for a weight or a norm.
type foldVerdict struct {
	stats  FoldedStats
	folded bool   // report quantized_scale_folded, count within
	why    string // on a weight whose factors explain it but are not folded
}

// foldCandidate reports a pair the second pass may look at: a weight
// quantized on the exported side against a plain published one, whose
// input channels a norm before it scales, or such a norm.
func foldCandidate(pr *pair) bool {
	if pr.tie != "" || pr.tol != (Tolerance{}) || pr.stats.Skipped != "" {
		return false
	}
	if pr.quant != nil {
		return pr.pub.t.Quant == nil && pr.exp.t.Quant != nil && len(pr.exp.t.Quant.Shape) == 2 && foldedNorm(pr.key) != ""
	}
	p, e := pr.pub.t, pr.exp.t
	return len(p.Shape) == 1 && p.Quant == nil && e.Quant == nil && p.DType.IsFloat() && e.DType.IsFloat() &&
		p.DType.Lanes() == 1 && e.DType.Lanes() == 1
}

// failsAsIs reports a measured pair that fails its default verdict.
func failsAsIs(pr *pair) bool {
	s := &pr.stats
	if s.reinitialized() || s.NonFinite > 0 {
		return false // not a scale: reported as it is
	}
	if pr.quant == nil {
		return s.Mismatches > 0
	}
	st := pr.engine.Stats.Steps
	switch {
	case st == nil:
		return false
	case pr.quant.statistical:
		return float64(s.RelL2) > quantStatK*st.NoiseRelL2
	}
	return st.Outside > 0
}

// folds runs the second pass for the selected pairs that fail as they are
// and may hold a folded scale, over every pair of their groups (a norm and
// the weights after it, whichever partition they are in), and returns the
// verdicts by key and the bytes it read.
func folds(ctx context.Context, opt ValueOptions, entries []*pair, selected []*pair) (map[string]*foldVerdict, int64, error) {
	byKey := map[string]*pair{}
	groups := map[string][]string{} // norm → weights after it
	for _, pr := range entries {
		byKey[pr.key] = pr
		if foldCandidate(pr) && pr.quant != nil {
			n := foldedNorm(pr.key)
			groups[n] = append(groups[n], pr.key)
		}
	}
	var norms []string
	for _, pr := range selected {
		if !foldCandidate(pr) || !failsAsIs(pr) {
			continue
		}
		n := pr.key
		if pr.quant != nil {
			n = foldedNorm(pr.key)
		}
		if np, ok := byKey[n]; ok && foldCandidate(np) && np.quant == nil && len(groups[n]) > 0 && !slices.Contains(norms, n) {
			norms = append(norms, n)
		}
	}
	slices.Sort(norms)
	// The norms first: they are small, and a norm that holds the published
	// values cannot hold a reciprocal, so its weights are not read again.
	normRun, read, err := rerun(ctx, opt, byKey, norms)
	if err != nil {
		return nil, read, err
	}
	var changed, weights []string
	for _, n := range norms {
		if s := normRun[n].engine.Stats; s.Mismatches > 0 && s.NonFinite == 0 {
			changed = append(changed, n)
			weights = append(weights, groups[n]...)
		}
	}
	again, more, err := rerun(ctx, opt, byKey, weights)
	if read += more; err != nil {
		return nil, read, err
	}
	norms = changed
	out := map[string]*foldVerdict{}
	for _, n := range norms {
		norm := normRun[n].engine.Stats.Columns
		nv := &foldVerdict{stats: FoldedStats{FactorMin: Float(math.Inf(1)), FactorMax: Float(math.Inf(-1))}}
		for _, k := range groups[n] {
			pr := again[k]
			pr.stats.measured(pr.engine.Stats)
			if !failsAsIs(pr) || pr.engine.Stats.Steps == nil {
				continue
			}
			fit := fitColumns(pr.engine.Stats.Columns, pr.engine.Stats.Steps.NoiseRelL2, pr.exp.t.Quant.Shape[0])
			if fit.bad || len(fit.factors) != len(norm.PP) {
				continue
			}
			rec, tol := fit.reciprocal(norm), foldedTolerance(fit.residual, fit.rows)
			v := &foldVerdict{stats: FoldedStats{Norm: n, FactorMin: Float(fit.fmin), FactorMax: Float(fit.fmax),
				RelL2: Float(fit.residual), RelL2Bound: Float(fit.bound), Reciprocal: Float(rec), Tolerance: Float(tol)}}
			switch {
			case !fit.explained:
				continue // not a factor per column: judged as it is
			case rec <= tol:
				v.folded = true
				nv.folded = true
				nv.stats.Weights = append(nv.stats.Weights, k)
				nv.stats.FactorMin, nv.stats.FactorMax = min(nv.stats.FactorMin, v.stats.FactorMin), max(nv.stats.FactorMax, v.stats.FactorMax)
				nv.stats.Reciprocal, nv.stats.Tolerance = max(nv.stats.Reciprocal, v.stats.Reciprocal), max(nv.stats.Tolerance, v.stats.Tolerance)
			default:
				v.why = fmt.Sprintf("; a factor per input column (%s to %s) explains the difference (relative L2 %s after it, within %s), but %s does not hold its reciprocal (RMS of r·c − 1 %s > %s): not a folded scale",
					textfmt.Float(fit.fmin), textfmt.Float(fit.fmax), textfmt.Float(fit.residual), textfmt.Float(fit.bound), n, textfmt.Float(rec), textfmt.Float(tol))
			}
			out[k] = v
		}
		if nv.folded {
			out[n] = nv
		}
	}
	return out, read, nil
}

// judgeFolded counts a weight or norm found folded, with its info finding;
// it reports false for a pair the second pass did not find folded.
func (rep *ValueReport) judgeFolded(pr *pair, v *foldVerdict) bool {
	if v == nil || !v.folded {
		return false
	}
	s := &pr.stats
	st := v.stats
	s.Folded = &st
	rep.WithinTolerance++
	var msg string
	if pr.quant != nil {
		judged := *pr.engine.Stats.Steps
		s.Quantization = &QuantStats{Bound: "statistical", Outside: judged.Outside, MaxStepRatio: Float(judged.MaxRatio), MaxStepAt: judged.MaxAt,
			NoiseRelL2: Float(judged.NoiseRelL2), RelL2Bound: st.RelL2Bound, Within: true}
		msg = fmt.Sprintf("%s: a scale folded into the input channels (AWQ/SmoothQuant: factors %s to %s, their reciprocal in %s); with it taken out, relative L2 %s within the encoding's bound %s",
			s.Encoding, textfmt.Float(float64(st.FactorMin)), textfmt.Float(float64(st.FactorMax)), st.Norm,
			textfmt.Float(float64(st.RelL2)), textfmt.Float(float64(st.RelL2Bound)))
	} else {
		msg = fmt.Sprintf("holds the reciprocal of the scale folded into %s (AWQ/SmoothQuant: factors %s to %s; RMS of r·c − 1 %s ≤ %s)",
			strings.Join(st.Weights, ", "), textfmt.Float(float64(st.FactorMin)), textfmt.Float(float64(st.FactorMax)),
			textfmt.Float(float64(st.Reciprocal)), textfmt.Float(float64(st.Tolerance)))
	}
	rep.Findings = append(rep.Findings, Finding{Code: CodeQuantizedScaleFolded, Severity: Info, Key: s.Key, Message: msg,
		Got: map[string]any{"factor_min": st.FactorMin, "factor_max": st.FactorMax, "rel_l2": s.RelL2, "folded_rel_l2": st.RelL2, "reciprocal_rms": st.Reciprocal}})
	return true
}

// judgeQuantFolded judges a pair compared through codecs, saying in its
// quantization_error when a factor per column explains it but the norm
// before it does not hold the reciprocal.
func (rep *ValueReport) judgeQuantFolded(pr *pair, v *foldVerdict) {
	n := len(rep.Findings)
	rep.judgeQuant(pr)
	if v == nil || v.why == "" {
		return
	}
	for i := n; i < len(rep.Findings); i++ {
		if f := &rep.Findings[i]; f.Code == CodeQuantizationError {
			f.Message += v.why
		}
	}
}

// rerun compares copies of the pairs of keys again with sums per column,
// leaving the first pass's statistics as they are.
func rerun(ctx context.Context, opt ValueOptions, byKey map[string]*pair, keys []string) (map[string]*pair, int64, error) {
	if len(keys) == 0 {
		return nil, 0, nil
	}
	again := map[string]*pair{}
	run := make([]*pair, 0, len(keys))
	for _, k := range keys {
		cp := *byKey[k]
		again[k] = &cp
		run = append(run, &cp)
	}
	readers, engine := enginePairs(run)
	for _, p := range engine {
		p.Columns = true
	}
	read, err := values.Run(ctx, readers, engine, values.Options{Workers: opt.Workers, ReadAhead: opt.ReadAhead})
	return again, read, err
}
