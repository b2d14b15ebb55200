package verify

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/ckptcheck/ckptcheck/adapter"
	"github.com/ckptcheck/ckptcheck/checkpoint"
	"github.com/ckptcheck/ckptcheck/internal/textfmt"
	"github.com/ckptcheck/ckptcheck/safetensors"
	"github.com/ckptcheck/ckptcheck/verify/internal/values"
)

// The merge proof of diff --lora (Freivalds' test). For each target with
// base W, merged M and delta Δ = s·B·A, and k Gaussian probes x (seeded by
// LoRASeed and the key, so every run and partition draws the same), the
// engine measures D = (M − W)·x and the floor F = Σ_j ½ulp(M_ij)·|x_j| per
// row in the pass that reads the bytes; P = s·B·(A·x) costs O(r·(in+out)).
// The floor adds the delta's own rounding, u·s·|B|·(|A|·|x|) with u half an
// ULP of the coarser of the adapter's and the merged dtype (peft casts the
// float32 delta to a BF16 adapter's dtype before adding it,
// get_delta_weight; PeftModel.from_pretrained upcasts the adapter and adds
// once), plus float32's rounding of the r-term products. A correct merge,
// by either path, has |D − P| ≤ F in every row: it always passes.
//
// Why k = 3 cannot pass a wrong merge: let the merge be M = W + Δ' + ρ
// (ρ its rounding, |ρ·x| ≤ F). A wrong scale Δ' = c·Δ leaves D − P =
// (c−1)·P + ρ·x, so every row where |P| > 2F/|c−1| fails whatever x is:
// only a delta below the floor escapes, and that is lora_unverifiable, not
// a pass. A delta on the wrong module leaves a residual row r unrelated to
// x; r·x is N(0, ‖r‖²), so one probe misses it (|r·x| ≤ 2F) with
// probability at most 2·2F/(‖r‖·√(2π)) < 1.6·F/‖r‖, independently per
// probe: (1.6·F/‖r‖)^k for one row, and the test fails on any row. For a
// residual ten times its floor that is 4e-6 a row at k = 3; the thousands of
// rows of a real target only lower it.

// LoRASeed seeds the probe vectors of diff --lora.
const LoRASeed = 0x5eed_10a4

// DefaultLoRAProbes is how many probe vectors each target is projected on.
const DefaultLoRAProbes = 3

// LoRAOptions configures CompareLoRA.
type LoRAOptions struct {
	// Probes is k, the probe vectors a target; 0 means DefaultLoRAProbes.
	Probes             int
	Workers, ReadAhead int
	Progress           func(done, total int64)
	// Partition, when set, checks only its share of the tensors (see
	// lorapartition.go).
	Partition Partition
}

// LoRAReport is the merge proof's numbers: one entry per tensor checked.
type LoRAReport struct {
	Probes    int          `json:"probes"`
	Seed      uint64       `json:"seed"`
	BytesRead int64        `json:"bytes_read"`
	Targets   []LoRATarget `json:"targets"`
	// Findings are the merge findings (also in the report's findings):
	// the adapter's first, then the checks'.
	Findings        []Finding `json:"-"`
	adapterFindings int
	// Covered is the work this check did, and Items how many items the
	// whole run has (see LoRAOptions.Partition).
	Covered []Covered `json:"-"`
	Items   int       `json:"-"`
}

// LoRATarget is one target's measurement: the scale expected, the scale
// measured (⟨D, P⟩/⟨P, P⟩), the relative residual ‖D − P‖/‖P‖ and the
// relative floor ‖F‖/‖P‖ over every row and probe.
type LoRATarget struct {
	Key         string `json:"key"`
	Verdict     string `json:"verdict"`
	Rank        uint64 `json:"rank"`
	Scale       Float  `json:"scale"`
	Measured    Float  `json:"measured_scale"`
	RelResidual Float  `json:"rel_residual"`
	RelFloor    Float  `json:"rel_floor"`
}

// loraCheck is one tensor of the merge check.
type loraCheck struct {
	key    string
	module *loraModule // nil: not a target
	saved  bool        // compared with the adapter's modules_to_save copy
	proj   *values.Projection
	mdtype safetensors.DType
	mlx    bool       // the scale is mlx-lm's, not alpha/r
	dora   *doraCheck // a DoRA target's row check, in place of the probes
}

// CompareLoRA checks that the exported side of d (the merged export) is
// its published side (the base) with the adapter merged in: base + s·B·A
// for every target, the adapter's copy for each modules_to_save module, the
// base's values everywhere else. It reads the adapter's values and every
// byte of both sides once.
func (d *Comparison) CompareLoRA(ctx context.Context, adapterC *checkpoint.Checkpoint, opt LoRAOptions) (*LoRAReport, error) {
	k := opt.Probes
	if k <= 0 {
		k = DefaultLoRAProbes
	}
	la := readLoRA(adapterC)
	// The adapter's values are needed only to judge: read them while the
	// projections read the base and the merge; DoRA's row check needs them
	// while it reads.
	loaded := make(chan error, 1)
	if slices.ContainsFunc(la.modules, func(m *loraModule) bool { return m.mag != nil }) {
		if err := la.loadValues(d.Published.Checkpoint); err != nil {
			return nil, err
		}
		loaded <- nil
	} else {
		go func() { loaded <- la.loadValues(d.Published.Checkpoint) }()
	}
	rep := &LoRAReport{Probes: k, Seed: LoRASeed, Targets: []LoRATarget{}}
	rep.Findings = la.checkShapes(d.Published.Checkpoint)
	bad := map[string]bool{}
	for _, f := range rep.Findings {
		if f.Severity == Error {
			bad[f.Key] = true
		}
	}
	targets := map[string]*loraModule{}
	for _, m := range la.modules {
		if !bad[m.weight()] && m.a != nil && m.b != nil {
			targets[m.weight()] = m
		}
	}
	var rs shardReaders
	var checks []*loraCheck
	var projs []*values.Projection
	for _, p := range d.Published.View.Tensors {
		e, ok := d.Exported.View.Tensor(p.Name)
		if !ok || !slices.Equal(p.Shape, e.Shape) || p.Quant != nil || e.Quant != nil || !p.DType.IsFloat() || !e.DType.IsFloat() || p.DType.Bits() < 16 || e.DType.Bits() < 16 {
			continue
		}
		base := operand{t: p, src: d.Published.Sources}
		merged := operand{t: e, src: d.Exported.Sources}
		if base.unreadable() != "" || merged.unreadable() != "" {
			continue
		}
		c := &loraCheck{key: p.Name, module: targets[p.Name], mdtype: e.DType, mlx: la.layout == layoutMLX}
		if s, ok := la.saved[p.Name]; ok && !bad[p.Name] && slices.Equal(s.Tensor.Shape, p.Shape) {
			n := tensorBytes(adapter.Tensor{DType: s.Tensor.DType, Shape: s.Tensor.Shape})
			base = operand{t: adapter.Tensor{Name: p.Name, DType: s.Tensor.DType, Shape: s.Tensor.Shape,
				Segments: []adapter.Segment{{Length: n}}}, src: []Source{s}}
			c.saved = true
		}
		c.proj = &values.Projection{Base: rs.operand(&base), Merged: rs.operand(&merged)}
		if m := c.module; m != nil && !c.saved {
			cols := p.Shape[len(p.Shape)-1]
			if m.mag != nil && !m.embedding && cols > 0 {
				c.dora = newDoRACheck(m, c.proj.Base.Elements()/cols, e.DType)
				c.proj.Rows = c.dora.row
			} else {
				c.proj.Probes = probes(p.Name, k, cols)
			}
		}
		checks, projs = append(checks, c), append(projs, c.proj)
	}
	work := make([]Item, len(checks))
	for i, c := range checks {
		work[i] = Item{Name: c.key, Weight: int64(c.proj.Base.Size() + c.proj.Merged.Size())}
	}
	in := opt.Partition.Select(work)
	rep.Items = len(work)
	mine, projs := checks[:0:0], projs[:0]
	for i, c := range checks {
		if in[i] {
			rep.Covered = append(rep.Covered, Covered{Key: c.key, At: i, Bytes: work[i].Weight})
			if c.dora != nil {
				c.dora.rows = make([]doraRow, c.dora.n)
			}
			mine, projs = append(mine, c), append(projs, c.proj)
		}
	}
	checks = mine
	read, err := values.Project(ctx, rs.readers, projs, values.Options{Workers: opt.Workers, ReadAhead: opt.ReadAhead, Progress: opt.Progress})
	rep.BytesRead = read
	if lerr := <-loaded; err == nil {
		err = lerr
	}
	if err != nil {
		return nil, err
	}
	// An adapter whose values are not finite is not a target to judge (its
	// finding says why): its tensor is held to the base, as before.
	valueFindings := la.checkValues()
	for _, f := range valueFindings {
		if f.Severity == Error {
			for _, c := range checks {
				if c.key == f.Key {
					c.module = nil
				}
			}
		}
	}
	rep.Findings = sortedByKey(append(rep.Findings, valueFindings...))
	rep.adapterFindings = len(rep.Findings)
	for _, c := range checks {
		if c.proj.NonFinite > 0 {
			rep.Findings = append(rep.Findings, Finding{Code: CodeNonFinite, Severity: Error, Side: Exported, Key: c.key,
				Message: fmt.Sprintf("%s NaN or Inf values in the merged tensor", textfmt.Thousands(c.proj.NonFinite))})
		}
		switch {
		case c.module != nil && !c.saved:
			var t LoRATarget
			var f Finding
			if c.dora != nil {
				t, f = c.dora.judge(c)
			} else {
				t, f = c.judge(la.cfg.DoRA || c.module.mag != nil, adapterDType(c.module))
			}
			rep.Targets = append(rep.Targets, t)
			if f.Code != "" {
				rep.Findings = append(rep.Findings, f)
			}
		case c.proj.Differs == 0:
		case c.saved:
			rep.Findings = append(rep.Findings, Finding{Code: CodeLoRAMergeMismatch, Severity: Error, Key: c.key,
				Message: fmt.Sprintf("%s of %s elements differ from the adapter's modules_to_save copy: the merge lost the trained module",
					textfmt.Thousands(c.proj.Differs), textfmt.Thousands(c.proj.Base.Elements()))})
		default:
			rep.Findings = append(rep.Findings, Finding{Code: CodeLoRAMergeExtra, Severity: Error, Key: c.key,
				Message: fmt.Sprintf("%s of %s elements differ from the base, but the adapter neither targets nor saves this tensor",
					textfmt.Thousands(c.proj.Differs), textfmt.Thousands(c.proj.Base.Elements()))})
		}
	}
	return rep, nil
}

func adapterDType(m *loraModule) safetensors.DType {
	if m.a.Tensor.DType.Bits() < m.b.Tensor.DType.Bits() {
		return m.a.Tensor.DType
	}
	return m.b.Tensor.DType
}

// probes draws k Gaussian vectors of n values, seeded by LoRASeed and the
// key.
func probes(key string, k int, n uint64) [][]float64 {
	h := fnv.New64a()
	h.Write([]byte(key))
	rng := rand.New(rand.NewPCG(LoRASeed, h.Sum64()))
	out := make([][]float64, k)
	for t := range out {
		out[t] = make([]float64, n)
		for j := range out[t] {
			out[t][j] = rng.NormFloat64()
		}
	}
	return out
}

// judge decides one target from its projections; dora says the config
// asks for DoRA, whose magnitude this target's weights lack.
func (c *loraCheck) judge(dora bool, adt safetensors.DType) (LoRATarget, Finding) {
	m, p := c.module, c.proj
	t := LoRATarget{Key: c.key, Rank: m.rank, Scale: Float(m.scale)}
	k := len(p.Probes)
	rows := uint64(len(p.Diff)) / uint64(max(k, 1))
	in := p.Base.Shape[len(p.Base.Shape)-1]
	r := int(m.rank)
	// u: the delta's rounding, relative (see the comment at the top).
	u := max(values.HalfULP(adt, 1), values.HalfULP(c.mdtype, 1)) + float64(r+1)*math.Ldexp(1, -24)
	pred := make([]float64, len(p.Diff))
	dfl := make([]float64, len(p.Diff))
	ax, aax := make([]float64, r), make([]float64, r)
	for q := range k {
		x := p.Probes[q]
		for i := range r {
			var s, sa float64
			row := m.aVals[uint64(i)*in : uint64(i+1)*in]
			for j, a32 := range row {
				a := float64(a32)
				s += a * x[j]
				sa += math.Abs(a) * math.Abs(x[j])
			}
			ax[i], aax[i] = s, sa
		}
		for o := range rows {
			var s, sa float64
			row := m.bVals[o*uint64(r) : (o+1)*uint64(r)]
			for i, b32 := range row {
				b := float64(b32)
				s += b * ax[i]
				sa += math.Abs(b) * aax[i]
			}
			pred[o*uint64(k)+uint64(q)] = m.scale * s
			dfl[o*uint64(k)+uint64(q)] = u * math.Abs(m.scale) * sa
		}
	}
	var dp, pp, res2, fl2 float64
	pass, visible, nearBase := true, false, true
	for i, d := range p.Diff {
		f := p.Floor[i] + dfl[i]
		pv := pred[i]
		dp += d * pv
		pp += pv * pv
		res2 += (d - pv) * (d - pv)
		fl2 += f * f
		if math.Abs(d-pv) > f {
			pass = false
		}
		if math.Abs(pv) > f {
			visible = true
		}
		if math.Abs(d) > p.Floor[i] {
			nearBase = false
		}
	}
	t.Measured, t.RelResidual, t.RelFloor = Float(math.NaN()), Float(math.NaN()), Float(math.NaN())
	if pp > 0 {
		ratio := dp / pp
		t.Measured = Float(ratio * m.scale)
		t.RelResidual, t.RelFloor = Float(math.Sqrt(res2/pp)), Float(math.Sqrt(fl2/pp))
	}
	f := Finding{Key: c.key}
	switch {
	case dora:
		t.Verdict = "unverified"
		f.Code, f.Severity = CodeLoRAUnverifiable, Warning
		f.Message = "use_dora is set, but the adapter holds no lora_magnitude_vector for this target: its DoRA merge cannot be checked"
		if m.mag != nil {
			f.Message = "a DoRA Embedding (lora_embedding_A, lora_magnitude_vector): its merge is not verified"
		}
	case pass && visible:
		t.Verdict = "merged"
		return t, Finding{}
	case !visible:
		t.Verdict, f = "unverifiable", c.belowRounding("delta")
	case nearBase || p.Differs == 0:
		t.Verdict = "not_merged"
		f.Code, f.Severity = CodeLoRANotMerged, Error
		f.Message = "holds the base's values: the adapter's delta was never merged into this target"
	default:
		t.Verdict = "mismatch"
		f.Code, f.Severity = CodeLoRAMergeMismatch, Error
		f.Message = fmt.Sprintf("neither the base nor base + %s·B·A: relative residual %s (floor %s)",
			textfmt.Float(m.scale), textfmt.Float(float64(t.RelResidual)), textfmt.Float(float64(t.RelFloor)))
		if ratio := dp / pp; c.fitsScale(ratio, pred, dfl) {
			why := fmt.Sprintf("alpha %s, rank %d: alpha instead of alpha/r is %s×", textfmt.Float(m.alpha), m.rank, textfmt.Float(m.alpha/m.scale))
			if c.mlx {
				why = "mlx-lm's lora_parameters.scale, used as is"
			}
			f.Message = fmt.Sprintf("merged with scale %s, not %s (%s× the expected; %s)",
				textfmt.Float(ratio*m.scale), textfmt.Float(m.scale), textfmt.Float(ratio), why)
			f.Got = map[string]any{"scale": Float(ratio * m.scale)}
			f.Expected = map[string]any{"scale": Float(m.scale)}
		}
	}
	return t, f
}

// belowRounding is the lora_unverifiable finding of a target whose
// delta (what: "delta", "DoRA merge") the merged dtype cannot show.
func (c *loraCheck) belowRounding(what string) Finding {
	return Finding{Code: CodeLoRAUnverifiable, Severity: Warning, Key: c.key,
		Message: fmt.Sprintf("the %s (scale %s, rank %d) is below what %s rounding can show: the merge cannot be told from the base at this precision",
			what, textfmt.Float(c.module.scale), c.module.rank, c.mdtype)}
}

// fitsScale reports a merge that is base + ratio·Δ within the floor: a
// wrong scale, not a wrong delta.
func (c *loraCheck) fitsScale(ratio float64, pred, dfl []float64) bool {
	if math.IsNaN(ratio) || math.IsInf(ratio, 0) {
		return false
	}
	p := c.proj
	for i, d := range p.Diff {
		if math.Abs(d-ratio*pred[i]) > p.Floor[i]+math.Abs(ratio)*dfl[i]+1e-3*math.Abs(ratio*pred[i]) {
			return false
		}
	}
	return true
}
