package verify

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/ckptcheck/ckptcheck/adapter"
	"github.com/ckptcheck/ckptcheck/checkpoint"
	"github.com/ckptcheck/ckptcheck/internal/textfmt"
	"github.com/ckptcheck/ckptcheck/safetensors"
	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// LMHead is the output projection that tie_word_embeddings shares with the
// input embedding.
const LMHead = "lm_head.weight"

// EmbeddingNames are the input embeddings of common layouts, in the order
// they are looked for.
var EmbeddingNames = []string{"model.embed_tokens.weight", "embed_tokens.weight", "transformer.wte.weight", "wte.weight",
	"model.language_model.embed_tokens.weight", "language_model.model.embed_tokens.weight",
	"tok_embeddings.weight", "embedding.word_embeddings.weight"}

// maxExtraTensors is how many more logical tensors than twice the published
// side's physical tensors an adapter may make: room for unstacked experts of
// a published checkpoint that stores them stacked too.
const maxExtraTensors = 1024

// SideOptions say how to read one side of a diff.
type SideOptions struct {
	// Chain is the adapter chain when Fixed; otherwise "auto" chooses it
	// among adapter.Candidates.
	Chain adapter.Chain
	Fixed bool
	// Extra runs after the side's adapter (custom renames, --strip-prefix).
	Extra adapter.Chain
	// Infer infers the side's adapter from the two headers, the other
	// side's HF names the template, and samples of the values where the
	// shapes leave candidates open (see adapter.Infer); the inferred
	// adapter is then the side's chain. One side at most infers.
	Infer bool
}

// DiffOptions says how to read the two sides and what to demand of them.
// The zero value chooses adapters automatically and demands nothing.
type DiffOptions struct {
	Published, Exported SideOptions
	// User adapters (--adapter-file) are candidates too.
	User []*adapter.Adapter
	// Tied overrides tie_word_embeddings from config.json.
	Tied *bool
	// DType, when set, is the dtype every floating-point tensor of the
	// exported side must have; differences become errors.
	DType *safetensors.DType
	// WeightsOnly leaves the files beside the weights alone: no
	// CompareFiles, and no check of the export's dtype against its config.
	WeightsOnly bool
	// Files says how to judge the files beside the weights.
	Files FileOptions
}

// A Mapped checkpoint is one side of a diff as its adapter presents it.
type Mapped struct {
	Side       Side
	Checkpoint *checkpoint.Checkpoint
	View       *adapter.View
	// Sources are the physical tensors the view's segments index.
	Sources []Source
	// Unavailable counts tensors of shards that could not be read or failed
	// validation: their keys are not compared.
	Unavailable int
}

// A Source is a readable physical tensor and the shard holding it.
type Source struct {
	// Tensor's DataOffsets index the shard's data section for safetensors,
	// the whole file (Shard.Data) for other formats (see headerTensors).
	Tensor *safetensors.Tensor
	Shard  *checkpoint.Shard
	// Err says why the tensor's bytes cannot be read (a torch view that is
	// not contiguous), or nil: it is compared by name, shape and dtype.
	Err error
	// Encoding is a GGUF tensor's GGML block type, 0 for a plain one (see
	// ggufBlockRows).
	Encoding tensorfile.Encoding
	// Pieces hold a torch tensor that is no single range (a strided view,
	// a DCP tensor in chunks; see torchLayout), whose DataOffsets are then
	// [0, its size); Transposed says its range holds its transpose.
	Pieces     []piece
	Transposed bool
}

// A Comparison is both sides of a diff as read, with what the diff found.
// CompareValues goes on to compare its values.
type Comparison struct {
	Published, Exported *Mapped
	// Tie is what is known of tie_word_embeddings.
	Tie      Tie
	Findings []Finding
	// notCompared holds keys whose values are not compared, with why
	// (quantized tensors; see recognise).
	notCompared map[string]string
	// quant is each side's quantization (published, exported).
	quant [2]quantSide
	// Inference is the inferred mapping of InferredSide, when inferred.
	Inference    *adapter.Inference
	InferredSide Side
}

// Tie is what is known of tie_word_embeddings and where it came from.
type Tie struct {
	Known, Tied bool
	Source      string
}

// Diff compares an exported checkpoint with the published one it came from:
// both are validated, mapped to HF names by their adapters, and compared key
// by key (missing, unexpected, shape, dtype), with tied embeddings
// understood. Unless DiffOptions says weights only, it also compares the
// files beside the weights (CompareFiles, run alongside), so it reads those
// files through the checkpoints' sources; it reads no tensor data (that is
// CompareValues'). Printing is package report's. ctx stops it between
// phases.
func Diff(ctx context.Context, pub, exp *checkpoint.Checkpoint, opt DiffOptions) (*Comparison, error) {
	if opt.Published.Infer && opt.Exported.Infer {
		return nil, errors.New("--adapter published=infer and exported=infer: inference maps one side's names onto the other's HF names, so one side at most infers")
	}
	d := &Comparison{
		Published: &Mapped{Side: Published, Checkpoint: pub},
		Exported:  &Mapped{Side: Exported, Checkpoint: exp},
	}
	sides := [2]*Mapped{d.Published, d.Exported}
	sideOpts := [2]SideOptions{opt.Published, opt.Exported}
	modelType, env := configOf(pub, exp)
	if modelType == "" {
		modelType = ggufArchitecture(exp)
	}
	var validated [2][]Finding
	var errs [2]error
	var candidates [2][]adapter.Chain
	var physical [2][]safetensors.TensorInfo
	var wg sync.WaitGroup
	var files []Finding
	var filesErr error
	if !opt.WeightsOnly {
		wg.Go(func() {
			files, filesErr = CompareFiles(ctx, pub, exp, opt.Files)
		})
	}
	for i, m := range sides {
		wg.Go(func() {
			m.Sources, m.Unavailable = sources(m.Checkpoint)
			physical[i] = make([]safetensors.TensorInfo, len(m.Sources))
			for j, s := range m.Sources {
				physical[i][j] = s.Tensor.TensorInfo
			}
			validated[i], errs[i] = Validate(ctx, m.Checkpoint)
			for j := range validated[i] {
				validated[i][j].Side = m.Side
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs[:]...); err != nil {
		return nil, err
	}
	if filesErr != nil {
		return nil, filesErr
	}
	if opt.WeightsOnly {
		validated[1] = slices.DeleteFunc(validated[1], func(f Finding) bool { return f.Code == CodeConfigMismatch && f.Key == configDTypeKey })
	}
	d.Findings = append(validated[0], validated[1]...)
	d.Findings = append(d.Findings, ggufConfigMismatches(parsedConfig(pub), exp)...)
	// The export's logical tensors are capped by what could match: a hostile
	// export of stacked zero-byte experts cannot make millions of them. An
	// inferred published side is capped by the export it is inferred
	// against.
	limit := 2*len(physical[0]) + maxExtraTensors
	limits := [2]int{limit, limit}
	if sideOpts[0].Infer {
		limits[0] = 2*len(physical[1]) + maxExtraTensors
	}
	// transformers loads the export under the published model's other HF
	// names too (its base model prefix, a VLM's older or newer names): the
	// exported view is aligned to the published one.
	aliases := adapter.AliasesOf(modelType)
	side := func(i int, cands []adapter.Chain) adapter.Side {
		s := adapter.Side{Tensors: physical[i], Candidates: cands, MaxTensors: limits[i]}
		if i == 1 {
			s.Aliases = aliases
		}
		return s
	}
	// Most exports need no adapter: when every exported name is a published
	// one as they stand, no adapter can match more of them, and the
	// candidates need not be looked for.
	for i, so := range sideOpts {
		if !so.Infer {
			continue
		}
		inf, a, err := inferSide(sides[i].Side, d.Published, d.Exported, physical, env, true)
		if err != nil {
			return nil, err
		}
		d.Inference, d.InferredSide = inf, sides[i].Side
		sideOpts[i].Chain, sideOpts[i].Fixed = adapter.Chain{a}, true
	}
	for i, so := range sideOpts {
		if so.Fixed {
			candidates[i] = []adapter.Chain{so.Chain.Then(so.Extra)}
		} else {
			candidates[i] = []adapter.Chain{so.Extra}
		}
	}
	// One chain a side: Choose has nothing to choose, and the two views
	// are built at once.
	wg.Go(func() { d.Published.View = candidates[0][0].ApplyLimit(physical[0], env, limits[0]) })
	d.Exported.View = candidates[1][0].ApplyLimit(physical[1], env, limits[1])
	wg.Wait()
	d.Exported.View = aliases.Align(d.Published.View, d.Exported.View)
	d.Tie = tieOf(pub, exp, opt.Tied)
	unavailable := [2]int{d.Published.Unavailable, d.Exported.Unavailable}
	for i, m := range sides {
		d.quant[i] = quantOf(m, physical[i])
		if hasGGML(m.Sources) {
			d.quant[i] = quantSide{method: "GGUF block types", ggml: true}
		}
	}
	d.quant[0].borrow(d.quant[1])
	d.quant[1].borrow(d.quant[0])
	judge := func() ([]Finding, int) {
		var out []Finding
		for i, m := range sides {
			d.quant[i].bind(m)
			bindGGML(m)
			bindShifts(m)
			out = append(out, adapterFindings(m)...)
			m.Unavailable = unavailable[i]
			if m.View.Truncated {
				m.Unavailable++ // what the adapter left out is not judged missing
			}
		}
		structural, common := structuralDiff(d.Published, d.Exported, d.Tie, opt.DType)
		return append(out, structural...), common
	}
	structural, common := judge()
	// When every exported key has a published namesake of its shape, the
	// views stand; else the adapters are looked for. (A shape that differs
	// may be a layout an adapter reads: a transposed view.)
	matchedAll := common == len(d.Exported.View.Tensors) && len(d.Exported.View.Tensors) > 0 &&
		!slices.ContainsFunc(structural, func(f Finding) bool { return f.Code == CodeShapeMismatch })
	if (!sideOpts[0].Fixed || !sideOpts[1].Fixed) && !matchedAll {
		for i, so := range sideOpts {
			if !so.Fixed {
				wg.Go(func() { candidates[i] = adapter.Candidates(physical[i], modelType, opt.User, so.Extra) })
			}
		}
		wg.Wait()
		d.Published.View, d.Exported.View = adapter.Choose(side(0, candidates[0]), side(1, candidates[1]), env)
		structural, common = judge()
	}
	// No preset reaches half of the published keys: inference from the
	// headers alone (so auto stays header-only) may.
	if !sideOpts[1].Fixed && d.Inference == nil && d.inferenceMayHelp(common) {
		if inf, a, err := inferSide(Exported, d.Published, d.Exported, physical, env, false); err == nil {
			chosen := d.Exported.View
			d.Exported.View = aliases.Align(d.Published.View, adapter.Chain{a}.Then(sideOpts[1].Extra).ApplyLimit(physical[1], env, limit))
			if s, c := judge(); c > common {
				structural, common, d.Inference, d.InferredSide = s, c, inf, Exported
			} else {
				d.Exported.View = chosen
				structural, common = judge()
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	d.Findings = append(d.Findings, d.inferenceNotes(structural)...)
	d.Findings = append(d.Findings, overlapHint(d.Published.View, d.Exported.View, common)...)
	d.Findings = d.recognise(d.Findings, common == len(d.Exported.View.Tensors))
	d.Findings = append(d.Findings, files...)
	return d, nil
}

func adapterFindings(m *Mapped) []Finding {
	var out []Finding
	v := m.View
	for _, dr := range v.Dropped {
		out = append(out, Finding{Code: CodeAdapterDropped, Severity: Warning, Side: m.Side, Key: dr.Name, Message: dr.Reason})
	}
	for i, e := range v.Errors {
		code := CodeAdapterError
		if v.Truncated && i == len(v.Errors)-1 {
			code = CodeAdapterLimit // the adapter's own record of where it stopped
		}
		out = append(out, Finding{Code: code, Severity: Error, Side: m.Side, Key: e.Name,
			Message: e.Message + " (rule " + e.Rule + ")"})
	}
	for _, c := range v.Collisions {
		if !slices.ContainsFunc(c.Sources, func(n string) bool { return n != c.Sources[0] }) {
			continue // one name in several shards: validation's duplicate_key_across_shards
		}
		out = append(out, Finding{Code: CodeAdapterCollision, Severity: Error, Side: m.Side, Key: c.Name,
			Message: fmt.Sprintf("adapter %s maps %s to one name; compared the first", v.Adapter, strings.Join(c.Sources, " and "))})
	}
	return out
}

// configOf is the model type and config values adapters use: the published
// config.json's, else the exported one's.
func configOf(pub, exp *checkpoint.Checkpoint) (string, adapter.Env) {
	for _, c := range []*checkpoint.Checkpoint{pub, exp} {
		if cfg := parsedConfig(c); cfg != nil {
			return cfg.ModelType, adapter.Env(cfg.Ints)
		}
	}
	return "", nil
}

// parsedConfig is the checkpoint's config.json when it parsed, else nil.
func parsedConfig(c *checkpoint.Checkpoint) *checkpoint.Config {
	if c.ConfigErr != nil {
		return nil
	}
	return c.Config
}

// sources lists a checkpoint's readable physical tensors, shard by shard,
// and counts the tensors of shards that are not readable. A name stored in
// two shards appears twice; the adapter keeps the first.
func sources(c *checkpoint.Checkpoint) ([]Source, int) {
	n, unavailable := 0, 0
	for _, s := range c.Shards {
		switch {
		case s.File != nil:
			n += s.File.NumTensors()
		case s.Header != nil:
			unavailable += s.Header.NumTensors()
		default:
			unavailable++ // at least one tensor is behind a shard we could not open
		}
	}
	out := make([]Source, 0, n)
	var named map[string]*checkpoint.Shard // for torchLayout
	for _, s := range c.Shards {
		if s.File == nil {
			continue
		}
		first := len(out)
		for i, t := range headerTensors(s) {
			out = append(out, Source{Tensor: t, Shard: s, Err: tensorError(s, i)})
			torchLayout(&out[len(out)-1], c, i, &named)
		}
		ggufBlockRows(s, out[first:])
	}
	return out, unavailable
}

func tieOf(pub, exp *checkpoint.Checkpoint, flag *bool) Tie {
	if flag != nil {
		return Tie{true, *flag, "--tied"}
	}
	for _, c := range []*checkpoint.Checkpoint{pub, exp} {
		if parsedConfig(c) == nil {
			continue
		}
		side := Published
		if c == exp {
			side = Exported
		}
		if v := c.Config.TieWordEmbeddings; v != nil {
			return Tie{true, *v, fmt.Sprintf("tie_word_embeddings: %v in the %s config.json", *v, side)}
		}
		// Absent, it is the model class's default (checkpoint.TieDefaultOf).
		def, own := checkpoint.TieDefaultOf(c.Config.ModelType)
		whose := fmt.Sprintf("model_type %q's", c.Config.ModelType)
		if !own {
			whose = "transformers' base"
		}
		return Tie{true, def.Tied, fmt.Sprintf("the %s config.json leaves tie_word_embeddings at %s default, %v (%s)", side, whose, def.Tied, def.Source)}
	}
	return Tie{}
}

// isBuffer reports whether a name is a non-persistent buffer that some
// writers save and others do not: rotary inverse frequencies, recomputed
// from the config at load. The diff ignores them on both sides.
func isBuffer(name string) bool {
	return name == "rotary_emb.inv_freq" || strings.HasSuffix(name, ".rotary_emb.inv_freq")
}

func embeddingOf(v *adapter.View) (adapter.Tensor, bool) {
	for _, name := range EmbeddingNames {
		if t, ok := v.Tensor(name); ok {
			return t, true
		}
	}
	return adapter.Tensor{}, false
}

// structuralDiff compares the two views key by key, and returns its
// findings and how many published keys the export has.
func structuralDiff(pubM, expM *Mapped, tie Tie, want *safetensors.DType) ([]Finding, int) {
	pub, exp := pubM.View, expM.View
	var out []Finding
	// An F32 export has a dtype difference on every tensor, all alike: build
	// each distinct message once.
	dtypeMessages := make(map[[2]safetensors.DType]string)
	dtypeMessage := func(p, e safetensors.DType) string {
		m, ok := dtypeMessages[[2]safetensors.DType{p, e}]
		if !ok {
			m = "published " + p.String() + ", exported " + e.String()
			dtypeMessages[[2]safetensors.DType{p, e}] = m
		}
		return m
	}
	// lm_head.weight on one side only is no missing or unexpected key when
	// the embeddings are tied: an exported copy of the head is fine (its
	// values are checked against the embedding with --values), a dropped
	// one is reported as tied_weight. Without a config or --tied, a tie is
	// assumed, with a warning, when the embedding has the head's shape.
	headOnOneSide := func(present, absent *adapter.View, absentSide Side) (f *Finding, handled bool) {
		head, _ := present.Tensor(LMHead)
		switch {
		case tie.Known && tie.Tied && absentSide == Published:
			return &Finding{Code: CodeTiedWeight, Severity: Info, Side: Published, Key: LMHead,
				Message: fmt.Sprintf("absent from published, which ties it to the input embedding (%s); the export keeps a copy (--values checks it against the export's embedding)", tie.Source)}, true
		case tie.Known && tie.Tied:
			return &Finding{Code: CodeTiedWeight, Severity: Info, Side: absentSide, Key: LMHead,
				Message: fmt.Sprintf("absent from %s; tied to the input embedding (%s)", absentSide, tie.Source)}, true
		case tie.Known:
			return nil, false
		}
		if emb, ok := embeddingOf(absent); ok && slices.Equal(emb.Shape, head.Shape) {
			return &Finding{Code: CodeTiedWeight, Severity: Warning, Side: absentSide, Key: LMHead,
				Message: fmt.Sprintf("absent from %s; assumed tied to %s (same shape); no config.json or --tied says so", absentSide, emb.Name)}, true
		}
		return nil, false
	}
	// Keys a side cannot show because its shards failed are not judged
	// missing or unexpected: they are listed once as not compared.
	var notCompared [2][]string
	// Keys the other side's adapter says it holds in no form it reads (its
	// absent lines) are listed once a line, with the reason.
	var absent [2]map[int][]string
	absentOn := func(side int, other *adapter.View, name string) bool {
		k := other.AbsentFor(name)
		if k < 0 {
			return false
		}
		if absent[side] == nil {
			absent[side] = map[int][]string{}
		}
		absent[side][k] = append(absent[side][k], name)
		return true
	}
	// One lookup a published key, remembered: an F32 export has a dtype
	// finding for every tensor, and findings are large, so they are counted
	// first and made in a slice of the right size.
	counterpart := make([]int32, len(pub.Tensors))
	matched, differ := 0, 0
	for i, t := range pub.Tensors {
		j := exp.Index(t.Name)
		counterpart[i] = int32(j)
		if j >= 0 {
			matched++
			if exp.Tensors[j].DType != t.DType {
				differ++
			}
		}
	}
	out = slices.Grow(out, differ+16)
	for i, t := range pub.Tensors {
		j := counterpart[i]
		ok := j >= 0
		var e adapter.Tensor
		if ok {
			e = exp.Tensors[j]
		}
		if !ok && isBuffer(t.Name) {
			continue
		}
		if !ok {
			if t.Name == LMHead {
				if f, ok := headOnOneSide(pub, exp, Exported); ok {
					if f != nil {
						out = append(out, *f)
					}
					continue
				}
			}
			if absentOn(0, exp, t.Name) {
				continue
			}
			if expM.Unavailable > 0 {
				notCompared[1] = append(notCompared[1], t.Name)
				continue
			}
			out = append(out, Finding{Code: CodeMissingKey, Severity: Error, Key: t.Name, Message: "in published, missing from exported"})
			continue
		}
		if t.Quant != nil || e.Quant != nil {
			if f, ok := ggmlShapeMismatch(t, e); ok {
				out = append(out, f)
			}
			continue // judged by its scheme (see recognise)
		}
		if !slices.Equal(t.Shape, e.Shape) {
			msg := fmt.Sprintf("published %s, exported %s", safetensors.FormatShape(t.Shape), safetensors.FormatShape(e.Shape))
			if swapped(t.Shape, e.Shape) {
				msg += " (transposed)"
			}
			out = append(out, Finding{Code: CodeShapeMismatch, Severity: Error, Key: t.Name, Message: msg,
				Published: t.Shape, Exported: e.Shape})
		}
		// --dtype judges floating-point exports; other dtypes stay compared.
		if t.DType != e.DType && (want == nil || !e.DType.IsFloat()) {
			out = append(out, Finding{Code: CodeDTypeMismatch, Severity: Warning, Key: t.Name,
				Message: dtypeMessage(t.DType, e.DType), Published: t.DType, Exported: e.DType})
		}
	}
	for _, e := range exp.Tensors {
		if want != nil && e.Quant == nil && e.DType.IsFloat() && e.DType != *want {
			out = append(out, Finding{Code: CodeDTypeMismatch, Severity: Error, Side: Exported, Key: e.Name,
				Message: fmt.Sprintf("exported %s, --dtype demands %s", e.DType, *want), Expected: *want, Got: e.DType})
		}
		if matched == len(exp.Tensors) {
			continue // every exported key has its published counterpart
		}
		if _, ok := pub.Tensor(e.Name); ok || isBuffer(e.Name) {
			continue
		}
		if e.Name == LMHead {
			if f, ok := headOnOneSide(exp, pub, Published); ok {
				if f != nil {
					out = append(out, *f)
				}
				continue
			}
		}
		if absentOn(1, pub, e.Name) {
			continue
		}
		if pubM.Unavailable > 0 {
			notCompared[0] = append(notCompared[0], e.Name)
			continue
		}
		f := Finding{Code: CodeUnexpectedKey, Severity: Error, Key: e.Name, Message: "in exported, not in published"}
		if e.Source != e.Name {
			f.Physical = e.Source
		}
		out = append(out, f)
	}
	out = append(out, absentFindings(absent, [2]*Mapped{pubM, expM})...)
	for i, keys := range notCompared {
		if len(keys) == 0 {
			continue
		}
		side, other := [2]*Mapped{pubM, expM}[i], [2]*Mapped{expM, pubM}[i]
		out = append(out, Finding{Code: CodeNotCompared, Severity: Warning, Side: side.Side, Keys: keys,
			Message: fmt.Sprintf("%s of %s not compared: %s of the %s side could not be read or failed validation (see its errors)",
				textfmt.Plural(len(keys), "key"), other.Side, textfmt.Plural(side.Unavailable, "tensor"), side.Side)})
	}
	return out, matched
}

// absentFindings are adapter_absent: the keys of each side that the other
// side's adapter says it holds in no form it reads, one finding an absent
// line (in the order of the lines), with its reason.
func absentFindings(absent [2]map[int][]string, sides [2]*Mapped) []Finding {
	var out []Finding
	for i, byRule := range absent {
		side, other := sides[i], sides[1-i]
		for _, k := range slices.Sorted(maps.Keys(byRule)) {
			a, keys := other.View.Absent[k], byRule[k]
			out = append(out, Finding{Code: CodeAdapterAbsent, Severity: Warning, Side: side.Side, Keys: keys,
				Message: fmt.Sprintf("%s of %s not in %s, not compared: %s (rule %s)",
					textfmt.Plural(len(keys), "key"), side.Side, other.Side, a.Reason, a.Rule)})
		}
	}
	return out
}

// swapped reports shapes that differ only by their last two dimensions
// swapped: a matrix, or a stack of them, stored transposed.
func swapped(a, b []uint64) bool {
	n := len(a)
	return n >= 2 && len(b) == n && slices.Equal(a[:n-2], b[:n-2]) && a[n-2] == b[n-1] && a[n-1] == b[n-2]
}
