package verify

import (
	"context"
	"fmt"
	"maps"
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
// A fold between two Linears (v_proj → o_proj, up_proj → down_proj) is
// foldedlinear.go's. Only --expect equal with the default bound looks for
// folds, and only on a quantized exported side.

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
	// Next is the Linear whose input columns hold the reciprocal of the
	// scale folded into this weight's output rows, Previous the Linear
	// whose output rows hold the reciprocal of this weight's column
	// factors (AutoAWQ's scale_fc_fc).
	Next     string `json:"next,omitempty"`
	Previous string `json:"previous,omitempty"`
	// BiasOf, on a bias, is the Linear whose output rows' scale divided it
	// as well (scale_fc_fc: fc1.bias.div_(scales)).
	BiasOf string `json:"bias_of,omitempty"`
	// FactorMin and FactorMax are the range of the per-column factors,
	// RowFactorMin and RowFactorMax that of the per-row ones (with Next).
	FactorMin    Float `json:"factor_min"`
	FactorMax    Float `json:"factor_max"`
	RowFactorMin Float `json:"row_factor_min,omitempty"`
	RowFactorMax Float `json:"row_factor_max,omitempty"`
	// RelL2 is the residual ‖e − p·diag(c)‖ / ‖p·diag(c)‖ (with Next,
	// ‖e − diag(r)·p·diag(c)‖ / ‖diag(r)·p·diag(c)‖) and RelL2Bound the
	// encoding's bound it is judged by (on a weight).
	RelL2      Float `json:"rel_l2,omitempty"`
	RelL2Bound Float `json:"rel_l2_bound,omitempty"`
	// Reciprocal is the RMS of r_j·c_j − 1 against the norm, or against
	// the other Linear with Next or Previous, within Tolerance when it
	// holds the reciprocal.
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
// ratio e_j / p_j from its sums (a zero published element cannot be
// undone).
func (f *columnFit) reciprocal(norm *values.ColumnStats) float64 {
	r := make([]float64, len(norm.PP))
	for j := range r {
		if r[j] = math.NaN(); norm.PP[j] > 0 {
			r[j] = norm.PE[j] / norm.PP[j]
		}
	}
	return reciprocalRMS(f.factors, f.energy, r)
}

// A foldVerdict is what the second pass found for a weight or a norm.
type foldVerdict struct {
	stats  FoldedStats
	folded bool   // report quantized_scale_folded, count within
	why    string // on a weight whose factors explain it but are not folded
}

// foldCandidate reports a pair the second pass may look at: a weight
// quantized on the exported side against a plain published one, whose
// input channels a norm or a Linear before it scales, or such a norm.
func foldCandidate(pr *pair) bool {
	if pr.tie != "" || pr.tol != (Tolerance{}) || pr.stats.Skipped != "" {
		return false
	}
	if pr.quant != nil {
		return pr.pub.t.Quant == nil && pr.exp.t.Quant != nil && len(pr.exp.t.Quant.Shape) == 2 &&
			(foldedNorm(pr.key) != "" || foldedPrev(pr.key) != "")
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

// foldGraph says which pairs may hold whose reciprocal.
type foldGraph struct {
	byKey  map[string]*pair
	normOf map[string]string   // weight → the norm before it
	groups map[string][]string // norm → the weights after it
	next   map[string]string   // first Linear → the second, a scale between them
	prev   map[string]string   // second Linear → the first
	biasOf map[string]string   // a first Linear's bias → the Linear
}

func newFoldGraph(entries []*pair) *foldGraph {
	g := &foldGraph{byKey: map[string]*pair{}, normOf: map[string]string{}, groups: map[string][]string{},
		next: map[string]string{}, prev: map[string]string{}, biasOf: map[string]string{}}
	for _, pr := range entries {
		g.byKey[pr.key] = pr
	}
	for _, pr := range entries {
		if !foldCandidate(pr) || pr.quant == nil {
			continue
		}
		if n := foldedNorm(pr.key); n != "" {
			if np, ok := g.byKey[n]; ok && foldCandidate(np) && np.quant == nil {
				g.normOf[pr.key] = n
				g.groups[n] = append(g.groups[n], pr.key)
			}
		}
		if s := foldedNext(pr.key); s != "" {
			if sp, ok := g.byKey[s]; ok && foldCandidate(sp) && sp.quant != nil && linearShapesFit(pr, sp) {
				g.next[pr.key], g.prev[s] = s, pr.key
				b := strings.TrimSuffix(pr.key, ".weight") + ".bias"
				if bp, ok := g.byKey[b]; ok && foldCandidate(bp) && bp.quant == nil && bp.pub.t.Shape[0] == pr.exp.t.Quant.Shape[0] {
					g.biasOf[b] = pr.key
				}
			}
		}
	}
	return g
}

// weightFit is a weight's fits in the second pass: per column, and per
// row with its columns weighted by w when a Linear after it may hold a
// scale of its rows.
type weightFit struct {
	col columnFit
	row *rowFit
	w   []float64
}

// folds runs the second pass for the selected pairs that fail as they are
// and may hold a folded scale, over the pairs their verdicts need (a norm
// and the weights after it, a Linear and the one before or after it,
// whichever partition they are in), and returns the verdicts by key and
// the bytes it read. It reads in three rounds, each only what the one
// before found needed: the norms, the weights after them, and the second
// Linears of folds between two.
func folds(ctx context.Context, opt ValueOptions, entries []*pair, selected []*pair) (map[string]*foldVerdict, int64, error) {
	g := newFoldGraph(entries)
	normsSelf, norms, firsts, seconds, biases := map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, pr := range selected {
		if !foldCandidate(pr) || !failsAsIs(pr) {
			continue
		}
		w := pr.key
		switch {
		case pr.quant == nil && g.biasOf[pr.key] != "":
			biases[pr.key] = true
			w = g.biasOf[pr.key]
		case pr.quant == nil:
			if len(g.groups[pr.key]) > 0 {
				normsSelf[pr.key], norms[pr.key] = true, true
			}
			continue
		case g.prev[pr.key] != "":
			seconds[pr.key] = true
			w = g.prev[pr.key]
		}
		firsts[w] = true
		if n := g.normOf[w]; n != "" {
			norms[n] = true
		}
	}
	// The norms (and biases) first: they are small, and a norm that holds
	// the published values cannot hold a reciprocal, so the weights after
	// it are read again only when they may hold a scale between two
	// Linears.
	small := maps.Clone(norms)
	maps.Copy(small, biases)
	normRun, read, err := rerun(ctx, opt, g.byKey, sortedKeys(small), nil)
	if err != nil {
		return nil, read, err
	}
	changed := map[string]bool{}
	for n := range norms {
		if s := normRun[n].engine.Stats; s.Mismatches > 0 && s.NonFinite == 0 {
			changed[n] = true
		}
	}
	weights := map[string]bool{}
	for n := range normsSelf {
		for _, w := range g.groups[n] {
			weights[w] = weights[w] || changed[n]
		}
	}
	for w := range firsts {
		weights[w] = weights[w] || changed[g.normOf[w]] || g.next[w] != ""
	}
	rowWeights := map[string][]float64{}
	for w, read := range weights {
		if !read || g.next[w] == "" {
			continue
		}
		var norm *values.ColumnStats
		if n := g.normOf[w]; changed[n] {
			norm = normRun[n].engine.Stats.Columns
		}
		if f := normFactors(norm, g.byKey[w].exp.t.Quant.Shape[1]); f != nil {
			rowWeights[w] = f
		}
	}
	again, more, err := rerun(ctx, opt, g.byKey, sortedKeys(weights), rowWeights)
	if read += more; err != nil {
		return nil, read, err
	}
	fits := map[string]*weightFit{}
	for w, pr := range again {
		pr.stats.measured(pr.engine.Stats)
		if !failsAsIs(pr) || pr.engine.Stats.Steps == nil {
			continue
		}
		st := pr.engine.Stats
		f := &weightFit{col: fitColumns(st.Columns, st.Steps.NoiseRelL2, pr.exp.t.Quant.Shape[0]), w: rowWeights[w]}
		if st.Rows != nil && f.w != nil {
			var pp float64
			for _, v := range st.Columns.PP {
				pp += v
			}
			r := fitRows(st.Rows, pp, st.Steps.NoiseRelL2, pr.exp.t.Quant.Shape[1])
			f.row = &r
		}
		fits[w] = f
		if f.row != nil && f.row.explained && !f.row.unit {
			seconds[g.next[w]] = true
		}
	}
	third, more, err := rerun(ctx, opt, g.byKey, sortedKeys(seconds), nil)
	if read += more; err != nil {
		return nil, read, err
	}
	secondFits := map[string]*columnFit{}
	for s, pr := range third {
		if st := pr.engine.Stats; st.Steps != nil {
			fit := fitColumns(st.Columns, st.Steps.NoiseRelL2, pr.exp.t.Quant.Shape[0])
			secondFits[s] = &fit
		}
	}
	out := map[string]*foldVerdict{}
	holds := map[string]bool{} // weights whose column factors their norm's reciprocal explains
	for w, f := range fits {
		n := g.normOf[w]
		if f.row != nil && f.row.explained && !f.row.unit {
			held := ""
			if changed[n] {
				held, holds[w] = n, true
			}
			out[w] = firstVerdict(w, held, f.w, f.row, g.next[w], secondFits[g.next[w]])
			continue
		}
		if n == "" || f.col.bad || !f.col.explained || len(f.col.factors) != len(normRun[n].engine.Stats.Columns.PP) {
			continue // not a factor per column: judged as it is
		}
		rec, tol := f.col.reciprocal(normRun[n].engine.Stats.Columns), foldedTolerance(f.col.residual, f.col.rows)
		v := &foldVerdict{stats: FoldedStats{Norm: n, FactorMin: Float(f.col.fmin), FactorMax: Float(f.col.fmax),
			RelL2: Float(f.col.residual), RelL2Bound: Float(f.col.bound), Reciprocal: Float(rec), Tolerance: Float(tol)}}
		if rec <= tol {
			v.folded, holds[w] = true, true
		} else {
			v.why = fmt.Sprintf("; a factor per input column (%s to %s) explains the difference (relative L2 %s after it, within %s), but %s does not hold its reciprocal (RMS of r·c − 1 %s > %s): not a folded scale",
				textfmt.Float(f.col.fmin), textfmt.Float(f.col.fmax), textfmt.Float(f.col.residual), textfmt.Float(f.col.bound), n, textfmt.Float(rec), textfmt.Float(tol))
		}
		out[w] = v
	}
	for s, fit := range secondFits {
		if pr := third[s]; !failsAsIs(measuredCopy(pr)) || fit.bad || !fit.explained {
			continue
		}
		var row *rowFit
		if f := fits[g.prev[s]]; f != nil {
			row = f.row
		}
		out[s] = secondVerdict(g.prev[s], row, fit)
	}
	for n := range normsSelf {
		if !changed[n] {
			continue
		}
		nv := &foldVerdict{stats: FoldedStats{FactorMin: Float(math.Inf(1)), FactorMax: Float(math.Inf(-1))}}
		for _, w := range g.groups[n] {
			if !holds[w] {
				continue
			}
			v := out[w].stats
			nv.folded = true
			nv.stats.Weights = append(nv.stats.Weights, w)
			nv.stats.FactorMin, nv.stats.FactorMax = min(nv.stats.FactorMin, v.FactorMin), max(nv.stats.FactorMax, v.FactorMax)
			if v.Next == "" {
				nv.stats.Reciprocal, nv.stats.Tolerance = max(nv.stats.Reciprocal, v.Reciprocal), max(nv.stats.Tolerance, v.Tolerance)
			}
		}
		if nv.folded {
			out[n] = nv
		}
	}
	for b := range biases {
		w := g.biasOf[b]
		if v := out[w]; v != nil && v.folded && v.stats.Next != "" {
			if bv := biasVerdict(w, fits[w].row, normRun[b].engine.Stats.Columns); bv != nil {
				out[b] = bv
			}
		}
	}
	return out, read, nil
}

// measuredCopy is pr with its statistics from its engine pair.
func measuredCopy(pr *pair) *pair {
	pr.stats.measured(pr.engine.Stats)
	return pr
}

func sortedKeys(m map[string]bool) []string {
	var keys []string
	for k, ok := range m {
		if ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
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
		msg = fmt.Sprintf("%s: %s; with it taken out, relative L2 %s within the encoding's bound %s",
			s.Encoding, foldedWhat(&st), textfmt.Float(float64(st.RelL2)), textfmt.Float(float64(st.RelL2Bound)))
	} else if st.BiasOf != "" {
		msg = fmt.Sprintf("divided by the scale folded into the output rows of %s (AutoAWQ scale_fc_fc: ratios %s to %s, the weight's row factors within an RMS of %s ≤ %s)",
			st.BiasOf, textfmt.Float(float64(st.FactorMin)), textfmt.Float(float64(st.FactorMax)),
			textfmt.Float(float64(st.Reciprocal)), textfmt.Float(float64(st.Tolerance)))
	} else {
		msg = fmt.Sprintf("holds the reciprocal of the scale folded into %s (AWQ/SmoothQuant: factors %s to %s; RMS of r·c − 1 %s ≤ %s)",
			strings.Join(st.Weights, ", "), textfmt.Float(float64(st.FactorMin)), textfmt.Float(float64(st.FactorMax)),
			textfmt.Float(float64(st.Reciprocal)), textfmt.Float(float64(st.Tolerance)))
	}
	got := map[string]any{"factor_min": st.FactorMin, "factor_max": st.FactorMax, "rel_l2": s.RelL2, "folded_rel_l2": st.RelL2, "reciprocal_rms": st.Reciprocal}
	if st.Next != "" {
		got["row_factor_min"], got["row_factor_max"] = st.RowFactorMin, st.RowFactorMax
	}
	rep.Findings = append(rep.Findings, Finding{Code: CodeQuantizedScaleFolded, Severity: Info, Key: s.Key, Message: msg, Got: got})
	return true
}

// foldedWhat says which scales were folded into a weight and where their
// reciprocals are.
func foldedWhat(st *FoldedStats) string {
	f := textfmt.Float
	switch {
	case st.Next != "" && st.Norm != "":
		return fmt.Sprintf("scales folded into the input channels (AWQ: factors %s to %s, their reciprocal in %s) and the output rows (factors %s to %s, their reciprocal in the input columns of %s)",
			f(float64(st.FactorMin)), f(float64(st.FactorMax)), st.Norm, f(float64(st.RowFactorMin)), f(float64(st.RowFactorMax)), st.Next)
	case st.Next != "":
		return fmt.Sprintf("a scale folded into the output rows (AWQ: factors %s to %s, their reciprocal in the input columns of %s)",
			f(float64(st.RowFactorMin)), f(float64(st.RowFactorMax)), st.Next)
	case st.Previous != "":
		return fmt.Sprintf("a scale folded into the input channels (AWQ: factors %s to %s, their reciprocal in the output rows of %s)",
			f(float64(st.FactorMin)), f(float64(st.FactorMax)), st.Previous)
	}
	return fmt.Sprintf("a scale folded into the input channels (AWQ/SmoothQuant: factors %s to %s, their reciprocal in %s)",
		f(float64(st.FactorMin)), f(float64(st.FactorMax)), st.Norm)
}

// judgeQuantFolded judges a pair compared through codecs, saying in its
// quantization_error when factors per column (or row) explain it but the
// norm or Linear next to it does not hold the reciprocal.
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
// and per row for those rowWeights has the columns' weights of, leaving
// the first pass's statistics as they are.
func rerun(ctx context.Context, opt ValueOptions, byKey map[string]*pair, keys []string, rowWeights map[string][]float64) (map[string]*pair, int64, error) {
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
	for i, p := range engine {
		p.Columns, p.RowWeights = true, rowWeights[keys[i]]
	}
	read, err := values.Run(ctx, readers, engine, values.Options{Workers: opt.Workers, ReadAhead: opt.ReadAhead})
	return again, read, err
}
