package verify

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/ckptcheck/ckptcheck/adapter"
	"github.com/ckptcheck/ckptcheck/internal/textfmt"
	"github.com/ckptcheck/ckptcheck/safetensors"
	"github.com/ckptcheck/ckptcheck/verify/internal/values"
)

// ValueOptions configures CompareValues.
type ValueOptions struct {
	Policy ValuePolicy
	// Workers is how many goroutines compare filled blocks; 0 means
	// GOMAXPROCS.
	Workers int
	// ReadAhead is how many blocks are read at once, ahead of the
	// workers; 0 means 4. Remote sources want more.
	ReadAhead int
	// Progress, if set, is called as the work advances with the bytes read
	// and the bytes to read in all. It is called from several goroutines.
	Progress func(done, total int64)
	// Partition, when set, compares only its share of the work: the
	// tensors and tie checks that Assign gives it (see ValueWork).
	Partition Partition
}

// Float is a float64 that JSON writes as null when it is NaN or infinite:
// a statistic that is undefined (the cosine of a zero tensor, any
// statistic of a skipped tensor) is null, never a number.
type Float float64

// MarshalJSON writes NaN and ±Inf as null.
func (f Float) MarshalJSON() ([]byte, error) {
	v := float64(f)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, v, 'g', -1, 64), nil
}

// UnmarshalJSON reads null as NaN.
func (f *Float) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*f = Float(math.NaN())
		return nil
	}
	// A JSON number is a Go float literal; strconv is many times faster
	// than a nested json.Unmarshal, and merge reads one per statistic.
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return fmt.Errorf("not a number: %.40s", b)
	}
	*f = Float(v)
	return nil
}

// Defined reports whether the statistic has a value.
func (f Float) Defined() bool { return !math.IsNaN(float64(f)) && !math.IsInf(float64(f), 0) }

// TensorStats is how one compared tensor differs between the two sides.
type TensorStats struct {
	Key       string            `json:"key"`
	Published safetensors.DType `json:"published_dtype"`
	Exported  safetensors.DType `json:"exported_dtype"`
	Elements  uint64            `json:"elements"`
	// Mismatches counts elements outside the tolerance.
	Mismatches   uint64 `json:"mismatches"`
	BitIdentical bool   `json:"bit_identical"`
	// MaxAbsDiff is the largest |e − p| over finite pairs, at MaxAt
	// (coordinates), where the sides hold PublishedAt and ExportedAt.
	MaxAbsDiff  Float    `json:"max_abs_diff"`
	MaxAt       []uint64 `json:"max_at,omitempty"`
	PublishedAt Float    `json:"published_at"`
	ExportedAt  Float    `json:"exported_at"`
	MeanAbsDiff Float    `json:"mean_abs_diff"`
	// RelL2 is ‖e − p‖ / ‖p‖ and Cosine the cosine similarity, over finite
	// pairs; null where undefined (a zero tensor).
	RelL2  Float `json:"rel_l2"`
	Cosine Float `json:"cosine"`
	// NonFinite counts exported NaN or Inf where the published value is finite.
	NonFinite uint64 `json:"nonfinite"`
	// NonFiniteAt is the first element where one side is NaN or Inf and the
	// other is not the same.
	NonFiniteAt []uint64  `json:"nonfinite_at,omitempty"`
	Tolerance   Tolerance `json:"tolerance"`
	// Bound is the drift bound the tensor is judged by under
	// ExpectDerived; nil under ExpectEqual.
	Bound *DriftBound `json:"bound,omitempty"`
	// Constant is set when either side holds one value throughout: no
	// evidence of re-initialization either way.
	Constant bool   `json:"constant,omitempty"`
	Skipped  string `json:"skipped,omitempty"`
	// Encoding names a quantized side's encoding (see quantvalues.go), and
	// Quantization how it fared against the encoding's own bound.
	Encoding     string      `json:"encoding,omitempty"`
	Quantization *QuantStats `json:"quantization,omitempty"`
	// Folded, set when a scale folded into the weight's input channels
	// (or, on a norm, their reciprocal) was found, is its numbers (see
	// folded.go).
	Folded *FoldedStats `json:"folded,omitempty"`
}

// ValueReport sums up a value comparison.
type ValueReport struct {
	// Expect is what the values were judged against: ExpectEqual
	// (WithinTolerance and Mismatched count the tolerance's verdicts) or
	// ExpectDerived (they count the drift bound's).
	Expect          Expect        `json:"expect"`
	Compared        int           `json:"compared"`
	BitIdentical    int           `json:"bit_identical"`
	Equal           int           `json:"equal"` // equal values in other bytes (an exact upcast)
	WithinTolerance int           `json:"within_tolerance"`
	Mismatched      int           `json:"mismatched"`
	Skipped         int           `json:"skipped"`
	BytesRead       int64         `json:"bytes_read"`
	Tensors         []TensorStats `json:"tensors"`
	// Tolerant records whether a tolerance was set: a fine-tune expected.
	Tolerant bool `json:"tolerant,omitempty"`
	// Findings are the value findings (also in the report's findings).
	Findings []Finding `json:"-"`
	// Covered is the work this comparison did, and Items how many items
	// the whole comparison has: every item for a whole run, the share of
	// ValueOptions.Partition otherwise.
	Covered []Covered `json:"-"`
	Items   int       `json:"-"`
}

// A pair is two logical tensors compared element by element: published
// against exported, or a side's tied head against its embedding.
type pair struct {
	key      string
	pub, exp operand
	tol      Tolerance
	stats    TensorStats
	tie      Side         // for a tie check, the side; "" for published vs exported
	engine   *values.Pair // what the value engine compares, once it runs
	quant    *quantPair   // set when a side is decoded through its codec
}

// An operand is one side of a pair: a logical tensor and the physical
// tensors its segments point into.
type operand struct {
	t   adapter.Tensor
	src []Source
}

// size is the logical tensor's size in bytes.
func (o *operand) size() uint64 { return tensorBytes(o.t) }

func tensorBytes(t adapter.Tensor) uint64 {
	o := values.Operand{DType: t.DType, Shape: t.Shape}
	return o.Size()
}

// unreadable says why the operand's bytes cannot be read, or "": a shard
// that failed validation (truncated, overlapping offsets) is not read.
func (o *operand) unreadable() string {
	for _, seg := range o.t.Segments {
		src := o.src[seg.Source]
		if s := src.Shard; s.File == nil {
			return fmt.Sprintf("%s failed validation; its values are not read", s.Path)
		}
		if src.Err != nil {
			return fmt.Sprintf("%s in %s cannot be read (%v); its values are not read", src.Tensor.Name, src.Shard.Path, src.Err)
		}
		if seg.Transposed && src.Pieces != nil {
			return fmt.Sprintf("%s in %s is stored in pieces and read as a transposed tile; its values are not read", src.Tensor.Name, src.Shard.Path)
		}
	}
	if _, ok := storedTransposedAs(o.t, o.src); !ok {
		return fmt.Sprintf("%s is stored transposed and mapped in part; its values are not read", o.t.Source)
	}
	return ""
}

// enginePairs gives the value engine the pairs to compare: each
// operand's segments as byte ranges of its shards' data sections, and
// those data sections, numbered.
func enginePairs(pairs []*pair) ([]io.ReaderAt, []*values.Pair) {
	var rs shardReaders
	resolve := func(p *pair, o *operand) values.Operand {
		if p.quant != nil && o.t.Quant != nil {
			return codecOperand(o, rs.segments)
		}
		return rs.operand(o)
	}
	out := make([]*values.Pair, len(pairs))
	for i, p := range pairs {
		p.engine = &values.Pair{Name: p.key, Published: resolve(p, &p.pub), Exported: resolve(p, &p.exp), Tolerance: values.Tolerance(p.tol)}
		out[i] = p.engine
	}
	return rs.readers, out
}

// CompareValues compares the values of every tensor the diff matched with
// the same shape, and, where a side holds a tied lm_head.weight, that head
// with the side's embedding. Reads go through the read scheduler into
// bounded, reused buffers on all cores; ctx stops it between blocks.
func (d *Comparison) CompareValues(ctx context.Context, opt ValueOptions) (*ValueReport, error) {
	expect, err := ParseExpect(string(opt.Policy.Expect))
	if err != nil {
		return nil, err
	}
	rep := &ValueReport{Expect: expect, Tensors: []TensorStats{}, Tolerant: opt.Policy.Tolerant()}
	entries, ties := d.valueWork(opt.Policy)
	work := workItems(entries, ties)
	in := opt.Partition.Select(work)
	rep.Items = len(work)
	var pairs, all []*pair
	var order []*TensorStats
	for k, pr := range entries {
		if !in[k] {
			continue
		}
		rep.Covered = append(rep.Covered, Covered{Key: pr.key, At: k, Bytes: work[k].Weight})
		if pr.stats.Skipped != "" {
			rep.Skipped++
		} else {
			pairs = append(pairs, pr)
		}
		order = append(order, &pr.stats)
	}
	all = append(all, pairs...)
	var myTies []*pair
	for k, t := range ties {
		if !in[len(entries)+k] {
			continue
		}
		rep.Covered = append(rep.Covered, Covered{Key: t.key, Tie: t.tie, At: len(entries) + k, Bytes: work[len(entries)+k].Weight})
		myTies = append(myTies, t)
		if t.stats.Skipped == "" && t.stats.Mismatches == 0 {
			all = append(all, t)
		}
	}
	ties = myTies
	readers, run := enginePairs(all)
	read, err := values.Run(ctx, readers, run, values.Options{Workers: opt.Workers, ReadAhead: opt.ReadAhead, Progress: opt.Progress})
	rep.BytesRead = read
	if err != nil {
		return nil, err
	}
	for _, p := range all {
		p.stats.measured(p.engine.Stats)
	}
	var folded map[string]*foldVerdict
	if !expect.Derived() {
		var read int64
		folded, read, err = folds(ctx, opt, entries, pairs)
		if rep.BytesRead += read; err != nil {
			return nil, err
		}
	}
	var unchanged []string
	for _, pr := range pairs {
		s := &pr.stats
		rep.Compared++
		if rep.judgeFolded(pr, folded[pr.key]) {
			continue
		}
		if pr.quant != nil && pr.tol == (Tolerance{}) && !expect.Derived() {
			rep.judgeQuantFolded(pr, folded[pr.key])
			continue
		}
		var fs []Finding
		if expect.Derived() {
			if pr.quant != nil {
				quantDerived(pr)
			}
			fs = derivedFindings(s)
			if s.Quantization != nil {
				s.Quantization.Within = len(fs) == 0
			}
		} else {
			fs = valueFindings(s)
		}
		switch {
		case s.BitIdentical:
			rep.BitIdentical++
			unchanged = append(unchanged, s.Key)
		case expect.Derived() && len(fs) > 0, !expect.Derived() && (s.Mismatches > 0 || s.reinitialized()):
			rep.Mismatched++
		case s.valuesEqual(), pr.tol == (Tolerance{}) && !expect.Derived():
			rep.Equal++
		default:
			rep.WithinTolerance++
		}
		if !expect.Derived() && pr.engine.Stats.WithinRounding && s.Mismatches > 0 && len(fs) > 0 && fs[0].Code == CodeValueMismatch {
			tol := roundingTolerance(s.Published)
			fs[0].Message += fmt.Sprintf("; every difference is within %s rounding of the published values, which %s accepts",
				s.Published, tol.Flags())
		}
		rep.Findings = append(rep.Findings, fs...)
	}
	for _, s := range order {
		rep.Tensors = append(rep.Tensors, *s)
	}
	for _, t := range ties {
		if t.stats.Mismatches > 0 {
			rep.Findings = append(rep.Findings, Finding{Code: CodeTiedWeightMismatch, Severity: Error, Side: t.tie, Key: LMHead,
				Message: fmt.Sprintf("differs from the tied %s on the %s side: %s of %s elements, worst |Δ| %s at %s",
					t.pub.t.Name, t.tie, textfmt.Thousands(t.stats.Mismatches), textfmt.Thousands(t.stats.Elements),
					textfmt.Float(float64(t.stats.MaxAbsDiff)), coords(t.stats.MaxAt))})
		}
	}
	if (rep.Tolerant || expect.Derived()) && len(unchanged) > 0 {
		rep.Findings = append(rep.Findings, unchangedFinding(unchanged))
	}
	if f, ok := notTrained(rep.Tensors); ok && expect.Derived() {
		rep.Findings = append(rep.Findings, f)
	}
	return rep, nil
}

// unchangedFinding is the summary of tensors bit-identical to the
// published ones when a tolerance or ExpectDerived said a fine-tune was
// expected.
func unchangedFinding(keys []string) Finding {
	msg := fmt.Sprintf("%s bit-identical to the published ones: frozen on purpose, or never updated",
		textfmt.Plural(len(keys), "tensor"))
	return Finding{Code: CodeUnchanged, Severity: Info, Message: msg, Keys: keys}
}

func newPair(key string, p, e adapter.Tensor, ps, es []Source) *pair {
	pr := &pair{key: key, pub: operand{t: p, src: ps}, exp: operand{t: e, src: es}}
	pr.stats = TensorStats{Key: key, Published: p.DType, Exported: e.DType}
	pr.stats.Elements, _ = safetensors.TensorInfo{Shape: p.Shape}.NumElements()
	return pr
}

// valueWork lists what CompareValues compares, from the headers and the
// policy alone: every tensor the diff matched with the same shape, in the
// published view's order (those skipped marked so), then the tie checks.
func (d *Comparison) valueWork(policy ValuePolicy) (entries, ties []*pair) {
	add := func(p, e adapter.Tensor) {
		pr := newPair(p.Name, p, e, d.Published.Sources, d.Exported.Sources)
		d.quantOperands(pr)
		tol, skip := policy.For(p.Name)
		pr.tol, pr.stats.Tolerance = tol, tol
		if policy.Expect.Derived() {
			b := policy.BoundFor(p.Name)
			pr.stats.Bound = &b
		}
		if skip == "" {
			skip = d.notCompared[p.Name]
		}
		if skip == "" && pr.quant == nil {
			skip = uncomparable(p.DType, e.DType)
		}
		if skip == "" {
			skip = pr.pub.unreadable() + pr.exp.unreadable()
		}
		if skip == "" {
			skip = pr.tilesUnread() // tiles.go
		}
		if skip != "" {
			pr.stats.skip(skip)
		}
		entries = append(entries, pr)
	}
	for _, p := range d.Published.View.Tensors {
		e, ok := d.Exported.View.Tensor(p.Name)
		// A quantized weight against another encoding is listed, skipped
		// (notCompared); other shapes that differ the structural diff reports.
		if !ok || (!slices.Equal(p.Shape, e.Shape) && p.Quant == nil && e.Quant == nil) || ggmlShapesDiffer(p, e) {
			continue
		}
		add(p, e)
		if sameEncoding(p, e) { // stored alike: the companions compare byte for byte too
			for k, c := range p.Quant.Companions {
				add(c, e.Quant.Companions[k])
			}
		}
	}
	return entries, d.tieChecks()
}

// workItems names and weighs the work for Assign: a tensor by its key, a
// tie check by its side; the weight is the bytes read, none when skipped.
func workItems(entries, ties []*pair) []Item {
	items := make([]Item, 0, len(entries)+len(ties))
	for _, pr := range entries {
		items = append(items, Item{Name: pr.key, Weight: pr.weight()})
	}
	for _, t := range ties {
		items = append(items, Item{Name: tieItemName(t.tie), Weight: t.weight()})
	}
	return items
}

// tieItemName names a tie check among the work items; no HF name has a
// space.
func tieItemName(side Side) string { return LMHead + " tied on the " + string(side) + " side" }

// weight is the bytes a pair reads: none when it is not compared.
func (p *pair) weight() int64 {
	if p.stats.Skipped != "" || p.stats.Mismatches > 0 {
		return 0
	}
	return int64(p.pub.size() + p.exp.size())
}

// ValueWork lists the work CompareValues does, as items for Assign: the
// tensors compared, by key, in the published view's order, then the tie
// checks; each weighs the bytes it reads. ValueOptions.Partition selects
// among exactly these.
func (d *Comparison) ValueWork(policy ValuePolicy) []Item {
	return workItems(d.valueWork(policy))
}

// measured sets the statistics the value engine measured.
func (s *TensorStats) measured(v values.Stats) {
	s.Mismatches, s.BitIdentical, s.NonFinite, s.Constant = v.Mismatches, v.BitIdentical, v.NonFinite, v.Constant
	s.MaxAbsDiff, s.MaxAt = Float(v.MaxAbsDiff), v.MaxAt
	s.PublishedAt, s.ExportedAt = Float(v.PublishedAt), Float(v.ExportedAt)
	s.MeanAbsDiff, s.RelL2, s.Cosine = Float(v.MeanAbsDiff), Float(v.RelL2), Float(v.Cosine)
	s.NonFiniteAt = v.NonFiniteAt
}

// skip marks the statistics of a tensor that is not compared: undefined.
func (s *TensorStats) skip(reason string) {
	nan := Float(math.NaN())
	s.Skipped = reason
	s.MaxAbsDiff, s.PublishedAt, s.ExportedAt, s.MeanAbsDiff, s.RelL2, s.Cosine = nan, nan, nan, nan, nan, nan
}

// ValueBytes is how many bytes CompareValues reads at least: both sides of
// every tensor matched with the same shape.
func (d *Comparison) ValueBytes() int64 {
	var n int64
	for _, p := range d.Published.View.Tensors {
		if e, ok := d.Exported.View.Tensor(p.Name); ok && slices.Equal(p.Shape, e.Shape) {
			n += int64(tensorBytes(p) + tensorBytes(e))
		}
	}
	return n
}

// uncomparable says why two dtypes' values cannot be compared, or "".
func uncomparable(p, e safetensors.DType) string {
	switch {
	case p == e:
		return ""
	case !p.Decodable() || !e.Decodable():
		return fmt.Sprintf("%s and %s: sub-byte floats compare bit for bit, only within one dtype", p, e)
	case p == safetensors.C64 || e == safetensors.C64:
		return fmt.Sprintf("%s and %s: complex values compare only with complex", p, e)
	}
	return ""
}

// tieChecks lists, per side, lm_head.weight against that side's embedding
// when the diff found the embeddings tied.
func (d *Comparison) tieChecks() []*pair {
	if !d.Tie.Tied {
		return nil
	}
	var out []*pair
	for _, m := range []*Mapped{d.Published, d.Exported} {
		head, ok := m.View.Tensor(LMHead)
		if !ok {
			continue
		}
		emb, ok := embeddingOf(m.View)
		if !ok {
			continue
		}
		pr := newPair(LMHead, emb, head, m.Sources, m.Sources)
		pr.tie = m.Side
		switch {
		case !slices.Equal(emb.Shape, head.Shape) || uncomparable(emb.DType, head.DType) != "":
			// Nothing to compare element by element: they differ.
			pr.stats.Mismatches = pr.stats.Elements
			pr.stats.MaxAbsDiff = Float(math.NaN())
		case pr.pub.unreadable() != "" || pr.exp.unreadable() != "":
			pr.stats.skip(pr.pub.unreadable() + pr.exp.unreadable())
		}
		out = append(out, pr)
	}
	return out
}

// reinitialized reports values unrelated to the published ones. A fine-tune
// moves weights by ~1e-3 relative; an unrelated tensor (another seed, another
// layer, never loaded) by ~1. This holds whatever the tolerance.
func (s *TensorStats) reinitialized() bool {
	return !s.Constant && float64(s.Cosine) < 0.5 && float64(s.RelL2) > 0.5
}

func valueFindings(s *TensorStats) []Finding {
	var out []Finding
	switch {
	case s.reinitialized():
		out = append(out, reinitializedFinding(s))
	case s.Mismatches > 0:
		msg := fmt.Sprintf("%s of %s elements outside %s; worst |Δ| %s at %s (published %s, exported %s)",
			textfmt.Thousands(s.Mismatches), textfmt.Thousands(s.Elements), s.Tolerance, textfmt.Float(float64(s.MaxAbsDiff)), coords(s.MaxAt),
			textfmt.Float(float64(s.PublishedAt)), textfmt.Float(float64(s.ExportedAt)))
		switch {
		case s.NonFiniteAt != nil && (s.MaxAt == nil || s.MaxAbsDiff == 0):
			msg = fmt.Sprintf("%s of %s elements outside %s; first at %s (NaN or Inf on one side)",
				textfmt.Thousands(s.Mismatches), textfmt.Thousands(s.Elements), s.Tolerance, coords(s.NonFiniteAt))
		case s.NonFiniteAt != nil:
			msg += fmt.Sprintf("; NaN or Inf on one side first at %s", coords(s.NonFiniteAt))
		}
		out = append(out, Finding{Code: CodeValueMismatch, Severity: Error, Key: s.Key, Message: msg,
			Got: map[string]any{"mismatches": s.Mismatches, "max_abs_diff": s.MaxAbsDiff, "rel_l2": s.RelL2}})
	}
	if s.NonFinite > 0 {
		out = append(out, nonFiniteFinding(s))
	}
	return out
}

func reinitializedFinding(s *TensorStats) Finding {
	return Finding{Code: CodeReinitialized, Severity: Error, Key: s.Key,
		Message: fmt.Sprintf("values unrelated to the published ones (cosine %s, relative L2 %s): random init, wrong file, or weights never loaded", textfmt.Float(float64(s.Cosine)), textfmt.Float(float64(s.RelL2))),
		Got:     map[string]any{"cosine": s.Cosine, "rel_l2": s.RelL2}}
}

func nonFiniteFinding(s *TensorStats) Finding {
	return Finding{Code: CodeNonFinite, Severity: Error, Side: Exported, Key: s.Key,
		Message: fmt.Sprintf("%s NaN or Inf values where the published tensor is finite", textfmt.Thousands(s.NonFinite))}
}

// roundingTolerance is the tolerance that accepts any difference within a
// dtype's rounding: half a unit in the last place, relative (and absolute
// for F16's subnormals).
func roundingTolerance(d safetensors.DType) Tolerance {
	if d == safetensors.F16 {
		return Tolerance{Atol: math.Ldexp(1, -25), Rtol: math.Ldexp(1, -11)}
	}
	return Tolerance{Rtol: math.Ldexp(1, -8)}
}

// Flags writes the tolerance as command-line flags: "--rtol 0.00390625".
func (t Tolerance) Flags() string {
	var parts []string
	if t.Atol != 0 {
		parts = append(parts, "--atol "+strconv.FormatFloat(t.Atol, 'g', -1, 64))
	}
	if t.Rtol != 0 {
		parts = append(parts, "--rtol "+strconv.FormatFloat(t.Rtol, 'g', -1, 64))
	}
	return strings.Join(parts, " ")
}

func (t Tolerance) String() string {
	if t == (Tolerance{}) {
		return "exact equality"
	}
	return fmt.Sprintf("atol %g + rtol %g·|p|", t.Atol, t.Rtol)
}

func coords(at []uint64) string {
	if at == nil {
		return "?"
	}
	return safetensors.FormatShape(at)
}
