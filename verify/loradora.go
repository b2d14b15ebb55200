package verify

import (
	"fmt"
	"math"
	"sync"

	"github.com/ckptcheck/ckptcheck/internal/textfmt"
	"github.com/ckptcheck/ckptcheck/safetensors"
	"github.com/ckptcheck/ckptcheck/verify/internal/values"
)

// DoRA's merge (huggingface/peft src/peft/tuners/lora/variants.py @
// b921e124e83b5d8efea130ae24276662adcdb297, DoraLinearVariant.merge_safe,
// called by layer.py's Linear.merge @
// 003369494699fedd543fe38d16e52df96aeae743; the norm is dora.py's
// DoraLinearLayer.get_weight_norm @ 0a6cd5a459262e590346d1c2856759cedd14c615):
//
//	Δ = s·B·A (get_delta_weight), n = ‖W + Δ‖ over dim 1, M = (m / n)·(W + Δ)
//
// with m the saved lora_magnitude_vector [out]. For a Linear weight
// [out, in] (fan_in_fan_out is Conv1D's [in, out], whose pair does not fit
// a Linear base and is a shape mismatch before this) dim 1 is the input
// axis: one norm and one factor f_o = m_o/n_o per output row.
//
// The check reads each row o of W and M once (the pass that reads the
// bytes), forms the row's Δ_o = s·B_o·A (r multiply-adds an element: the
// O(r·out·in) the norm costs anyway), its norm and f_o, and holds every
// element to
//
//	|M_oj − f_o·v_oj| ≤ ½ulp(M_oj) + 1.01·|f_o|·(|v_oj|·e_o + (1+e_o)·g_oj)
//
// v = W + Δ. With u half an ULP (relative) of the coarser of the adapter's
// and the merged dtype, g_oj = u(1+u)(|W_oj| + 2|Δ_oj|) + (r+1)·2^-24·|s|·Σ_i|B_oi||A_ij|
// bounds the roundings of Δ (its float32 products, its cast to a BF16
// adapter's dtype) and of W + Δ; e_o = 3u + (in+2)·2^-24 + ‖g_o‖/n_o
// bounds the row's common factor: the norm's rounding to the dtype, its
// float32 sum, the factor's rounding, the product's, and what the
// elements' roundings move the norm by. peft's BF16 path rounds at each of
// those steps, the upcast float32 path once at the end: both pass.
//
// What fails: a merge that skipped the magnitude (W + Δ, a plain LoRA
// merge of a DoRA adapter) is off by (f_o − 1)·v_o, caught in every row
// whose magnitude differs from its norm by more than about 2·e_o (≈8u,
// 3% for BF16; closer than that, the plain merge is a DoRA merge at this
// precision); a wrong scale c·s moves each element by about f_o·(c−1)·Δ_oj,
// caught wherever the delta itself shows (the target is unverifiable
// otherwise, as for LoRA).

// A doraCheck is one DoRA target's row-by-row check, filled by
// values.Projection's Rows from several workers (each row its own entry).
type doraCheck struct {
	m      *loraModule
	mdtype safetensors.DType
	u      float64
	n      uint64    // the target's rows
	rows   []doraRow // one a row, made when the target is checked; summed in order, so alike in every run
	pool   sync.Pool // *[]float64 of 2·in: a worker's Δ and Σ|B||A|
	// a and absA are lora_A and |lora_A| in float64, made once for the
	// rows' inner loop.
	once    sync.Once
	a, absA []float64
}

// doraRow is one row's outcome.
type doraRow struct {
	fails, plainFails, visible, moved bool
	res2, fl2, den2                   float64
}

func newDoRACheck(m *loraModule, rows uint64, mdtype safetensors.DType) *doraCheck {
	u := max(values.HalfULP(adapterDType(m), 1), values.HalfULP(mdtype, 1))
	return &doraCheck{m: m, mdtype: mdtype, u: u, n: rows}
}

// row checks row o: w the base's, merged the merge's.
func (dc *doraCheck) row(o uint64, w, merged []float64) {
	m, in, r := dc.m, uint64(len(w)), dc.m.rank
	bufp, _ := dc.pool.Get().(*[]float64)
	if bufp == nil || uint64(len(*bufp)) < 2*in {
		b := make([]float64, 2*in)
		bufp = &b
	}
	defer dc.pool.Put(bufp)
	delta, absd := (*bufp)[:in], (*bufp)[in:2*in]
	clear(delta)
	clear(absd)
	dc.once.Do(func() {
		dc.a, dc.absA = make([]float64, len(m.aVals)), make([]float64, len(m.aVals))
		for i, v := range m.aVals {
			dc.a[i], dc.absA[i] = float64(v), math.Abs(float64(v))
		}
	})
	for i := range r {
		b := float64(m.bVals[o*r+i])
		ab := math.Abs(b)
		a, aa := dc.a[i*in:(i+1)*in], dc.absA[i*in:(i+1)*in]
		d, ad := delta[:len(a)], absd[:len(a)]
		for j := range a {
			d[j] += b * a[j]
			ad[j] += ab * aa[j]
		}
	}
	s, u := m.scale, dc.u
	prod := float64(r+1) * math.Ldexp(1, -24)
	var n2, g2 float64
	for j, wj := range w {
		d := s * delta[j]
		v := wj + d
		g := u*(1+u)*(math.Abs(wj)+2*math.Abs(d)) + prod*math.Abs(s)*absd[j]
		delta[j], absd[j] = d, g
		n2 += v * v
		g2 += g * g
	}
	norm := math.Sqrt(n2)
	f := float64(m.magVals[o]) / norm
	e := 3*u + float64(in+2)*math.Ldexp(1, -24) + math.Sqrt(g2)/norm
	out := doraRow{}
	for j, wj := range w {
		d, g, mj := delta[j], absd[j], merged[j]
		v := wj + d
		want := f * v
		half := values.HalfULP(dc.mdtype, mj)
		bound := half + 1.01*math.Abs(f)*(math.Abs(v)*e+(1+e)*g)
		res := mj - want
		if math.Abs(res) > bound {
			out.fails = true
		}
		if math.Abs(mj-v) > half+1.01*g {
			out.plainFails = true
		}
		if math.Abs(want-wj) > bound {
			out.visible = true
		}
		if math.Abs(mj-wj) > half {
			out.moved = true
		}
		if !math.IsInf(half, 0) {
			out.res2 += res * res
			out.fl2 += bound * bound
			out.den2 += (want - wj) * (want - wj)
		}
	}
	dc.rows[o] = out
}

// judge decides the target from its rows.
func (dc *doraCheck) judge(c *loraCheck) (LoRATarget, Finding) {
	m := dc.m
	t := LoRATarget{Key: c.key, Rank: m.rank, Scale: Float(m.scale), Measured: Float(math.NaN())}
	var res2, fl2, den2 float64
	fails, plainFails, visible, moved := false, false, false, false
	for _, r := range dc.rows {
		res2, fl2, den2 = res2+r.res2, fl2+r.fl2, den2+r.den2
		fails, plainFails = fails || r.fails, plainFails || r.plainFails
		visible, moved = visible || r.visible, moved || r.moved
	}
	t.RelResidual, t.RelFloor = Float(math.NaN()), Float(math.NaN())
	if den2 > 0 {
		t.RelResidual, t.RelFloor = Float(math.Sqrt(res2/den2)), Float(math.Sqrt(fl2/den2))
	}
	f := Finding{Key: c.key}
	switch {
	case !fails && visible:
		t.Verdict = "merged"
		return t, Finding{}
	case !visible:
		t.Verdict, f = "unverifiable", c.belowRounding("DoRA merge")
	case !moved || c.proj.Differs == 0:
		t.Verdict = "not_merged"
		f.Code, f.Severity = CodeLoRANotMerged, Error
		f.Message = "holds the base's values: the adapter's DoRA delta was never merged into this target"
	case !plainFails:
		t.Verdict = "mismatch"
		f.Code, f.Severity = CodeLoRAMergeMismatch, Error
		f.Message = fmt.Sprintf("merged as plain LoRA, base + %s·B·A: DoRA's magnitude (lora_magnitude_vector / ‖W + %s·B·A‖ per output row) was not applied",
			textfmt.Float(m.scale), textfmt.Float(m.scale))
	default:
		t.Verdict = "mismatch"
		f.Code, f.Severity = CodeLoRAMergeMismatch, Error
		f.Message = fmt.Sprintf("neither the base nor DoRA's (m / ‖W + %s·B·A‖)·(W + %s·B·A): relative residual %s (floor %s)",
			textfmt.Float(m.scale), textfmt.Float(m.scale), textfmt.Float(float64(t.RelResidual)), textfmt.Float(float64(t.RelFloor)))
	}
	return t, f
}
