package adapter

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/ckptcheck/ckptcheck/safetensors"
)

// Bounds of inference. Its work grows with the templates of the two sides
// and the candidates between them, never with layers x experts: a hostile
// header of thousands of distinct, shape-alike names stops at these.
const (
	// DefaultMaxTemplates is the distinct name templates a side may have.
	DefaultMaxTemplates = 2048
	// DefaultMaxCandidates is the candidate layouts of all exported
	// templates together.
	DefaultMaxCandidates = 1 << 14
	// MaxSampleBytes bounds the values sampled, both sides, all
	// candidates: a few MiB even for a 600B model.
	MaxSampleBytes = 4 << 20
	// sampleRows and sampleCols are the block read of each sample: the
	// first rows and columns of the tensor's first matrix.
	sampleRows, sampleCols = 16, 256
	// MatchBound is the largest relative L2 distance, ||e-p|| / ||p||, at
	// which a sample counts as the same tensor (the drift bound of a
	// fine-tune); a candidate also has to be clearly nearer than every
	// other (see Settle).
	MatchBound = 0.25
)

// InferOptions bound inference and say what it was inferred from.
type InferOptions struct {
	MaxTemplates, MaxCandidates int // 0: the defaults
	// From says what the two sides were, for the covers line of the
	// written adapter ("published X, exported Y").
	From string
	// Side names the side whose names are inferred, for messages:
	// "exported" (the default) or "published". The other side, HF-named,
	// is the template; Infer's arguments are the template first either way.
	Side string
}

// sides are the names messages give the side mapped and the template.
func (o InferOptions) sides() (mapped, template string) {
	if o.Side == "published" {
		return "published", "exported"
	}
	return cmp.Or(o.Side, "exported"), "published"
}

// mappedCheckpoint names the mapped side's checkpoint in messages.
func (o InferOptions) mappedCheckpoint() string {
	if mapped, _ := o.sides(); mapped != "exported" {
		return "the " + mapped + " checkpoint"
	}
	return "the export"
}

// An Inference is the mapping of an exported checkpoint's names onto a
// published one's, found from the two headers (Infer) and, where the
// shapes leave several candidates, from samples of their values (Samples,
// Settle). It is written as an adapter in the rule language (Text,
// Adapter), so the diff reads it as it reads a preset.
type Inference struct {
	pubInfo, expInfo []safetensors.TensorInfo
	pub, exp         []*nameTemplate
	env              inferEnv
	rawEnv           Env
	opt              InferOptions
	cands            [][]candidate // per exported template
	chosen           []int         // per exported template: the candidate taken, or -1
	why              []string      // per exported template left unmapped: why
	samples          []Sample
	conflicts        []InferConflict
	settled          bool
	sampleBytes      int64
}

// A Sample is one question values answer: a block of the published tensor
// and the same block of the exported tensor as one candidate would make
// it. The caller reads both (Rows x Cols at Row0, Col0 of each tensor's
// first matrix; see Block) into Pub and Exp and calls Settle.
type Sample struct {
	// Published and Exported are logical tensors whose segments index the
	// tensors given to Infer (published and exported respectively).
	Published, Exported Tensor
	Rows, Cols          uint64
	// Row0 and Col0 are where the block starts in the first matrix: 0,
	// but for a concat, whose later parts are sampled where they start.
	Row0, Col0 uint64
	Pub, Exp   []float64
	cands      []int // exported template, candidate pairs, flattened
}

// Block is the element block a sample reads of a tensor of this shape:
// its first rows and columns, of the first matrix (leading indices 0); a
// vector is one row.
func Block(shape []uint64) (rows, cols uint64) {
	switch len(shape) {
	case 0:
		return 1, 1
	case 1:
		return 1, min(shape[0], sampleRows*sampleCols)
	}
	return min(shape[len(shape)-2], sampleRows), min(shape[len(shape)-1], sampleCols)
}

// Infer finds, from names and shapes alone, how the exported tensors map
// onto the published ones. Names are cut into dotted segments; numeric
// segments are indices; tensors that differ only in their indices form a
// template, and templates are matched by instance count, index structure
// and shape: renames, transposes, splits along dim 0 (per key/value group
// with the config's heads), unstacked expert dimensions, and rotary row
// permutations with the config's heads. Where the names agree too
// (wrapper segments and prefixes aside) the layout is the published one.
// What shapes leave open is listed by Samples. env is the config, for
// heads and head_dim. The roles are the template's (HF names) and the
// unknown naming's: a published checkpoint in a trainer's names is
// inferred against an HF export by passing the export first (and
// InferOptions.Side "published", for the messages); "published" and
// "exported" in the fields of Sample and InferReport then mean the
// template and the side mapped.
func Infer(published, exported []safetensors.TensorInfo, env Env, opt InferOptions) (*Inference, error) {
	opt.MaxTemplates = cmp.Or(opt.MaxTemplates, DefaultMaxTemplates)
	opt.MaxCandidates = cmp.Or(opt.MaxCandidates, DefaultMaxCandidates)
	inf := &Inference{pubInfo: published, expInfo: exported, env: inferEnvOf(env), rawEnv: env, opt: opt}
	var err error
	mapped, template := opt.sides()
	if inf.pub, err = templatesOf(published, opt.MaxTemplates); err != nil {
		return nil, fmt.Errorf("%s: %v", template, err)
	}
	if inf.exp, err = templatesOf(exported, opt.MaxTemplates); err != nil {
		return nil, fmt.Errorf("%s: %v", mapped, err)
	}
	inf.cands = make([][]candidate, len(inf.exp))
	total := 0
	transposes := false
	for pass := range 2 {
		for x := range inf.exp {
			inf.cands[x] = inf.candidatesFor(x, transposes)
			total += len(inf.cands[x])
			if total > opt.MaxCandidates {
				return nil, inf.tooManyCandidates()
			}
			// A side stores matrices transposed when a template can only
			// be a transpose.
			transposes = transposes || len(inf.cands[x]) > 0 && !slices.ContainsFunc(inf.cands[x], func(c candidate) bool { return c.kind != opTranspose })
		}
		if pass == 0 && !transposes {
			break // no matrix is stored transposed: square ones are not either
		}
		total = 0
	}
	if !inf.addConcats(opt.MaxCandidates) {
		return nil, inf.tooManyCandidates()
	}
	inf.resolveByHeaders()
	inf.checkAgreement(inf.decided(nil))
	inf.keepConcatsWhole()
	inf.dropConflicts()
	inf.makeSamples()
	return inf, nil
}

func (inf *Inference) tooManyCandidates() error {
	mapped, template := inf.opt.sides()
	return fmt.Errorf("more than %d candidate layouts between %d %s and %d %s name templates: inference stops at %d (InferOptions.MaxCandidates)",
		inf.opt.MaxCandidates, len(inf.exp), mapped, len(inf.pub), template, inf.opt.MaxCandidates)
}

// resolveByHeaders takes what the names and shapes settle: a candidate
// whose names agree, then, repeatedly, the only candidate of a template,
// which no other template may then take.
func (inf *Inference) resolveByHeaders() {
	inf.chosen = make([]int, len(inf.exp))
	inf.why = make([]string, len(inf.exp))
	for x, cs := range inf.cands {
		inf.chosen[x] = -1
		if k := slices.IndexFunc(cs, func(c candidate) bool { return c.named }); k >= 0 {
			inf.cands[x] = cs[k : k+1]
		}
	}
	for changed := true; changed; {
		changed = false
		for x, cs := range inf.cands {
			if inf.chosen[x] >= 0 || len(cs) != 1 {
				continue
			}
			inf.chosen[x] = 0
			changed = true
			for y := range inf.cands {
				if y != x && inf.chosen[y] < 0 {
					inf.cands[y] = slices.DeleteFunc(inf.cands[y], func(c candidate) bool {
						return !sameChoice(&c, &cs[0]) && slices.ContainsFunc(cs[0].targets, func(t target) bool { return c.covers(t.pub) })
					})
				}
			}
		}
	}
	inf.keepConcatsWhole()
	inf.dropConflicts()
}

// dropConflicts unmaps templates that claim the same published template
// (the parts of one concat claim it once).
func (inf *Inference) dropConflicts() {
	by := map[int][]int{}
	for x, k := range inf.chosen {
		if k >= 0 {
			c := &inf.cands[x][k]
			for _, t := range c.targets {
				if len(c.parts) > 0 && x != c.exp {
					continue // claimed by its first part
				}
				by[t.pub] = append(by[t.pub], x)
			}
		}
	}
	for p, xs := range by {
		if len(xs) < 2 {
			continue
		}
		for _, x := range xs {
			var members []int
			if c := &inf.cands[x][inf.chosen[x]]; len(c.parts) > 0 {
				members = c.concatMembers()
			} else {
				members = []int{x}
			}
			for _, y := range members {
				inf.chosen[y] = -1
				mapped, _ := inf.opt.sides()
				inf.why[y] = fmt.Sprintf("%d %s templates would make %s", len(xs), mapped, inf.pub[p].key)
			}
		}
	}
}

// makeSamples lists a sample per candidate of each open template, for its
// first and last instance: one layer settles the template, two catch a
// layer whose tensor is another's.
func (inf *Inference) makeSamples() {
	pubByName := make(map[string]int, len(inf.pubInfo))
	for i, t := range inf.pubInfo {
		if _, dup := pubByName[t.Name]; !dup {
			pubByName[t.Name] = i
		}
	}
	for x, cs := range inf.cands {
		if inf.chosen[x] >= 0 || len(cs) < 2 {
			continue
		}
		xt := inf.exp[x]
		ms := []member{xt.members[0]}
		if n := len(xt.members); n > 1 {
			ms = append(ms, xt.members[n-1])
		}
		for k := range cs {
			c := &cs[k]
			if len(c.parts) > 0 && c.exp != x {
				continue // sampled in its first part's list
			}
			for mi, m := range ms {
				a, err := Parse("inferred", "name c\n"+inf.ruleText(c))
				if err != nil {
					continue
				}
				// The instance's tensors: itself, and, for a concat, the
				// same instance of each other part.
				srcs := []int{m.tensor}
				for _, y := range c.parts {
					yms := inf.exp[y].members
					srcs = append(srcs, yms[min(mi*(len(yms)-1), len(yms)-1)].tensor)
				}
				in := make([]safetensors.TensorInfo, len(srcs))
				for i, src := range srcs {
					in[i] = inf.expInfo[src]
				}
				v := Chain{a}.Apply(in, inf.rawEnv)
				for _, t := range v.Tensors {
					p, ok := pubByName[t.Name]
					if !ok || !slices.Equal(inf.pubInfo[p].Shape, t.Shape) {
						continue
					}
					for i := range t.Segments {
						t.Segments[i].Source = srcs[t.Segments[i].Source]
					}
					pt := inf.pubInfo[p]
					pub := Tensor{Name: pt.Name, DType: pt.DType, Shape: pt.Shape, Source: pt.Name, Segments: []Segment{{Source: p, Length: pt.Size()}}}
					rows, cols := Block(t.Shape)
					inf.samples = append(inf.samples, Sample{Published: pub, Exported: t, Rows: rows, Cols: cols, cands: []int{x, k}})
					// A concat's later parts, where they start: the first
					// rows (or columns) are the first part's only.
					at := inf.exp[x].shape[0]
					for _, y := range c.parts {
						yt := inf.exp[y]
						sm := Sample{Published: pub, Exported: t, Rows: min(yt.shape[0], sampleRows), Cols: cols, Row0: at, cands: []int{x, k}}
						if len(yt.shape) == 1 {
							sm.Rows, sm.Cols, sm.Row0, sm.Col0 = 1, min(yt.shape[0], sampleRows*sampleCols), 0, at
						} else if c.transposed {
							sm.Rows, sm.Cols, sm.Row0, sm.Col0 = rows, min(yt.shape[0], sampleCols), 0, at
						}
						inf.samples = append(inf.samples, sm)
						at += yt.shape[0]
					}
				}
			}
		}
	}
}

// Samples lists the samples that would settle the templates the headers
// leave open. The caller reads them in order, within MaxSampleBytes in
// all (each side's Rows x Cols elements, at the dtype's size; those it
// does not read stay empty and settle nothing), and hands them to Settle.
// A block several samples share may be read once and handed to each: it
// counts once in the report's sample bytes.
func (inf *Inference) Samples() []Sample { return inf.samples }

// Settle decides the open templates by their samples: a candidate whose
// samples all lie within MatchBound and that is clearly nearer than every
// other (at a quarter of their distance or less) is taken; a template
// whose candidates all fit as well (tensors that are all equal, norms
// initialised to 1) or none fits stays unmapped, and the report says so.
func (inf *Inference) Settle(samples []Sample) {
	inf.settled = true
	dist := map[[2]int]float64{}
	counted := map[*float64]bool{} // a block handed in for several samples is read once
	count := func(b []float64, d safetensors.DType) {
		if len(b) > 0 && !counted[&b[0]] {
			counted[&b[0]] = true
			inf.sampleBytes += int64(len(b) * d.Bits() / 8)
		}
	}
	for _, s := range samples {
		if len(s.cands) != 2 {
			continue
		}
		key := [2]int{s.cands[0], s.cands[1]}
		d := math.Inf(1)
		if len(s.Pub) > 0 && len(s.Pub) == len(s.Exp) {
			d = distance(s.Pub, s.Exp)
			count(s.Pub, s.Published.DType)
			count(s.Exp, s.Exported.DType)
		}
		if old, ok := dist[key]; !ok || d > old || math.IsNaN(d) {
			dist[key] = d
		}
	}
	before := slices.Clone(inf.chosen)
	for x, cs := range inf.cands {
		if inf.chosen[x] >= 0 || len(cs) < 2 {
			continue
		}
		best, second := -1, math.Inf(1)
		bd := math.Inf(1)
		for k := range cs {
			d, ok := dist[[2]int{x, k}]
			if c := &cs[k]; len(c.parts) > 0 && c.exp != x {
				// A concat is sampled in its first part's list.
				if j := slices.IndexFunc(inf.cands[c.exp], func(o candidate) bool { return sameChoice(&o, c) }); j >= 0 {
					d, ok = dist[[2]int{c.exp, j}]
				}
			}
			if !ok || math.IsNaN(d) {
				d = math.Inf(1)
			}
			cs[k].score, cs[k].scored = d, ok
			if d < bd {
				best, second, bd = k, bd, d
			} else if d < second {
				second = d
			}
		}
		switch {
		case best < 0 || bd > MatchBound:
			_, template := inf.opt.sides()
			inf.why[x] = "no candidate's sampled values are near the " + template + " ones"
		case second <= max(4*bd, 1e-6):
			inf.why[x] = whySeveral
		default:
			inf.chosen[x] = best
		}
	}
	inf.keepConcatsWhole()
	inf.checkAgreement(inf.decided(before))
	inf.keepConcatsWhole()
	inf.dropConflicts()
}

// decided lists the templates mapped now that were not in before (nil:
// none were).
func (inf *Inference) decided(before []int) []int {
	var out []int
	for x, k := range inf.chosen {
		if k >= 0 && (before == nil || before[x] < 0) {
			out = append(out, x)
		}
	}
	return out
}

const whySeveral = "the sampled values fit several candidates as well (equal or constant tensors): values cannot settle it"

// distance is ||e - p|| / ||p|| (0 when both are zero).
func distance(p, e []float64) float64 {
	var diff, norm float64
	for i := range p {
		d := e[i] - p[i]
		diff += d * d
		norm += p[i] * p[i]
	}
	switch {
	case diff == 0:
		return 0
	case norm == 0:
		return math.Inf(1)
	}
	return math.Sqrt(diff / norm)
}

// An InferReport says what inference mapped and what it left open.
type InferReport struct {
	// Templates counts the name templates of each side (the template,
	// the side mapped: published, exported unless InferOptions.Side says
	// otherwise).
	Templates [2]int
	Rules     int // mapping rules written
	Mapped    int // exported templates mapped
	// Ambiguities are templates with several candidates left, and what
	// would settle them.
	Ambiguities []InferAmbiguity
	Unmapped    []InferUnmapped
	// Conflicts are templates whose best fit their names or siblings
	// contradict.
	Conflicts   []InferConflict
	SampleBytes int64
	// Settled says whether samples were handed in (Settle).
	Settled bool
}

// An InferAmbiguity is an exported template the headers (or the samples)
// leave between candidates.
type InferAmbiguity struct {
	Exported string
	// Candidates are the first MaxListedCandidates of Count; Kinds counts
	// them all by their rule (split, rename, transpose, unstack).
	Candidates []string
	Count      int
	Kinds      map[string]int
	Settle     string
}

// MaxListedCandidates is how many of an ambiguous template's candidates
// a report names; the rest are counted by kind.
const MaxListedCandidates = 3

// Summary says what fits, briefly: every candidate when there are few,
// else how many of each kind and the first few ("12 candidates fit (12
// split): split into … | …, and 9 more").
func (a InferAmbiguity) Summary() string {
	list := strings.Join(a.Candidates, " | ")
	if a.Count <= len(a.Candidates) {
		return list
	}
	kinds := slices.Sorted(maps.Keys(a.Kinds))
	var parts []string
	for _, k := range kinds {
		parts = append(parts, fmt.Sprintf("%d %s", a.Kinds[k], k))
	}
	return fmt.Sprintf("%d candidates fit (%s): %s, and %d more", a.Count, strings.Join(parts, ", "), list, a.Count-len(a.Candidates))
}

// An InferUnmapped template has no candidate left, or none that fit.
type InferUnmapped struct {
	Exported, Best, Why string
}

// Report says what was mapped and what was not.
func (inf *Inference) Report() InferReport {
	r := InferReport{Templates: [2]int{len(inf.pub), len(inf.exp)}, SampleBytes: inf.sampleBytes, Settled: inf.settled, Conflicts: inf.conflicts}
	mapped, template := inf.opt.sides()
	for x, xt := range inf.exp {
		if k := inf.chosen[x]; k >= 0 {
			r.Mapped++
			if inf.cands[x][k].exp != x {
				continue // its concat's rules count once
			}
			st := inf.ruleLines(&inf.cands[x][k])
			r.Rules += len(st[0]) + len(st[1]) + len(st[2])
			continue
		}
		cs := inf.cands[x]
		if len(cs) >= 2 && (inf.why[x] == "" || inf.why[x] == whySeveral) {
			a := InferAmbiguity{Exported: xt.String(), Count: len(cs), Kinds: map[string]int{}}
			for i := range cs {
				a.Kinds[cs[i].kindWord()]++
				if i < MaxListedCandidates {
					a.Candidates = append(a.Candidates, cs[i].describe(inf.pub))
				}
			}
			a.Settle = "the values of one instance would settle it: --adapter " + mapped + "=infer"
			if inf.settled {
				a.Settle = inf.why[x]
			}
			r.Ambiguities = append(r.Ambiguities, a)
			continue
		}
		u := InferUnmapped{Exported: xt.String(), Why: inf.why[x]}
		switch {
		case !xt.safe:
			u.Why = "its name holds characters the rule language cannot hold as a word (refused)"
		case u.Why == "":
			u.Why = "no " + template + " template of its instance count, indices and shape"
		}
		if len(cs) > 0 {
			u.Best = cs[0].describe(inf.pub)
		} else {
			u.Best = inf.nearest(xt)
		}
		r.Unmapped = append(r.Unmapped, u)
	}
	return r
}

// nearest names the published template most like t: the same shape, else
// the same instance count.
func (inf *Inference) nearest(t *nameTemplate) string {
	for _, p := range inf.pub {
		if slices.Equal(p.shape, t.shape) {
			return p.String()
		}
	}
	for _, p := range inf.pub {
		if p.count() == t.count() {
			return p.String()
		}
	}
	return ""
}

// Notes says, for each exported tensor name inference did not map, why
// and its best candidate.
func (inf *Inference) Notes() map[string]string {
	out := map[string]string{}
	rep := inf.Report() // once: a report per template would be quadratic in templates
	for x, xt := range inf.exp {
		if inf.chosen[x] >= 0 {
			continue
		}
		note := inf.noteOf(x, rep)
		for _, m := range xt.members {
			out[inf.expInfo[m.tensor].Name] = note
		}
	}
	return out
}

func (inf *Inference) noteOf(x int, rep InferReport) string {
	key := inf.exp[x].String()
	for _, a := range rep.Ambiguities {
		if a.Exported == key {
			return "inference left it between " + a.Summary() + "; " + a.Settle
		}
	}
	for _, u := range rep.Unmapped {
		if u.Exported == key {
			s := "inference did not map it: " + u.Why
			if u.Best != "" {
				s += "; best candidate " + u.Best
			}
			return s
		}
	}
	return ""
}
