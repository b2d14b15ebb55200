package verify

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/ckptcheck/ckptcheck/adapter"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// Sides of a diff, as findings and reports name them.
const (
	Published = "published"
	Exported  = "exported"
)

// LMHead is the output projection that tie_word_embeddings shares with the
// input embedding.
const LMHead = "lm_head.weight"

// DiffOptions says how to read the two sides and what to demand of them.
// The zero value chooses adapters automatically and demands nothing.
type DiffOptions struct {
	// Adapters per side ([0] published, [1] exported) where Fixed says so;
	// otherwise adapter.Choose picks among adapter.Candidates.
	Adapters [2]adapter.Chain
	Fixed    [2]bool
	// Extra runs after each side's adapter (custom renames).
	Extra [2]adapter.Chain
	// User adapters (--adapter-file) are candidates too.
	User []*adapter.Adapter
	// Tied overrides tie_word_embeddings from config.json.
	Tied *bool
	// DType, when set, is the dtype every floating-point tensor of the
	// exported side must have; differences become errors.
	DType *safetensors.DType
}

// A Diffed is both sides of a diff as read, with what the diff found.
type Diffed struct {
	tie      tie
	Views    [2]*adapter.View
	Sources  [2][]Source // physical tensors behind the views' segments
	Findings []Finding
}

// A Source is a physical tensor: its header entry and the shard holding it.
type Source struct {
	Info  safetensors.TensorInfo
	Shard *safetensors.Shard
}

// Diff compares an exported checkpoint with the published one it came from:
// both are validated, mapped to HF names by their adapters, and compared key
// by key (missing, unexpected, shape, dtype), with tied embeddings
// understood. It is a pure function of its inputs; printing is the report's.
func Diff(pub, exp *safetensors.Checkpoint, opt DiffOptions) *Diffed {
	d := &Diffed{}
	cks := [2]*safetensors.Checkpoint{pub, exp}
	sides := [2]string{Published, Exported}
	// Each side is validated and its adapter candidates found in parallel.
	modelType, env := configOf(pub, exp)
	var validated [2][]Finding
	var candidates [2][]adapter.Chain
	var physical [2][]safetensors.TensorInfo
	var wg sync.WaitGroup
	for i, c := range cks {
		wg.Go(func() {
			d.Sources[i] = sources(c)
			physical[i] = make([]safetensors.TensorInfo, len(d.Sources[i]))
			for j, s := range d.Sources[i] {
				physical[i][j] = s.Info
			}
			if opt.Fixed[i] {
				candidates[i] = []adapter.Chain{opt.Adapters[i].Then(opt.Extra[i])}
			} else {
				candidates[i] = adapter.Candidates(physical[i], modelType, opt.User, opt.Extra[i])
			}
			validated[i] = Validate(c)
			for j := range validated[i] {
				validated[i][j].Side = sides[i]
			}
		})
	}
	wg.Wait()
	d.Findings = append(validated[0], validated[1]...)
	d.Views[0], d.Views[1] = adapter.Choose(physical[0], physical[1], candidates[0], candidates[1], env)
	for i := range cks {
		for _, dr := range d.Views[i].Dropped {
			d.Findings = append(d.Findings, Finding{Code: CodeAdapterDropped, Severity: Warning, Side: sides[i], Key: dr.Name,
				Message: "no Hugging Face counterpart: " + dr.Reason})
		}
		for _, e := range d.Views[i].Errors {
			d.Findings = append(d.Findings, Finding{Code: CodeAdapterError, Severity: Error, Side: sides[i], Key: e.Name,
				Message: e.Message + " (rule " + e.Rule + ")"})
		}
		for _, c := range d.Views[i].Collisions {
			if !slices.ContainsFunc(c.Sources, func(n string) bool { return n != c.Sources[0] }) {
				continue // one name in several shards: validation's duplicate_key_across_shards
			}
			d.Findings = append(d.Findings, Finding{Code: CodeAdapterCollision, Severity: Error, Side: sides[i], Key: c.Name,
				Message: fmt.Sprintf("adapter %s maps %s to one name; compared the first", d.Views[i].Adapter, strings.Join(c.Sources, " and "))})
		}
	}
	d.tie = tieOf(pub, exp, opt.Tied)
	d.Findings = append(d.Findings, structuralDiff(d.Views[0], d.Views[1], d.tie, opt.DType)...)
	d.Findings = append(d.Findings, overlapHint(d.Views[0], d.Views[1])...)
	return d
}

// overlapHint warns when most published keys have no exported counterpart:
// the usual cause is a naming scheme the adapter does not cover.
func overlapHint(pub, exp *adapter.View) []Finding {
	common := 0
	for _, t := range pub.Tensors {
		if _, ok := exp.Tensor(t.Name); ok {
			common++
		}
	}
	if len(pub.Tensors) == 0 || len(exp.Tensors) == 0 || 2*common >= len(pub.Tensors) {
		return nil
	}
	return []Finding{{Code: CodeLowKeyOverlap, Severity: Warning,
		Message: fmt.Sprintf("only %d of %d published keys are in the export under adapters %s / %s; the export may use another naming scheme (see --adapter, --strip-prefix, --rename)",
			common, len(pub.Tensors), pub.Adapter, exp.Adapter)}}
}

// configOf is the model type and config values adapters use: the published
// config.json's, else the exported one's.
func configOf(pub, exp *safetensors.Checkpoint) (string, adapter.Env) {
	for _, c := range []*safetensors.Checkpoint{pub, exp} {
		if c.Config != nil && c.Config.Err == nil {
			return c.Config.ModelType, adapter.Env(c.Config.Ints)
		}
	}
	return "", nil
}

// sources lists a checkpoint's physical tensors, shard by shard. A name
// stored in two shards appears twice; the adapter keeps the first.
func sources(c *safetensors.Checkpoint) []Source {
	out := make([]Source, 0, c.NumTensors())
	for _, s := range c.Shards {
		if s.File == nil {
			continue
		}
		for _, t := range s.File.Tensors {
			out = append(out, Source{Info: t, Shard: s})
		}
	}
	return out
}

// tie is what is known of tie_word_embeddings and where it came from.
type tie struct {
	known, tied bool
	source      string
}

func tieOf(pub, exp *safetensors.Checkpoint, flag *bool) tie {
	if flag != nil {
		return tie{true, *flag, "--tied"}
	}
	for i, c := range []*safetensors.Checkpoint{pub, exp} {
		if c.Config == nil || c.Config.Err != nil {
			continue
		}
		side := [2]string{Published, Exported}[i]
		if v := c.Config.TieWordEmbeddings; v != nil {
			return tie{true, *v, fmt.Sprintf("tie_word_embeddings: %v in the %s config.json", *v, side)}
		}
		// transformers' PretrainedConfig defaults tie_word_embeddings to true.
		return tie{true, true, fmt.Sprintf("the %s config.json leaves tie_word_embeddings at transformers' default, true", side)}
	}
	return tie{}
}

// isBuffer reports whether a name is a non-persistent buffer that some
// writers save and others do not: rotary inverse frequencies, recomputed
// from the config at load. The diff ignores them on both sides.
func isBuffer(name string) bool {
	return name == "rotary_emb.inv_freq" || strings.HasSuffix(name, ".rotary_emb.inv_freq")
}

func structuralDiff(pub, exp *adapter.View, tie tie, want *safetensors.DType) []Finding {
	out := make([]Finding, 0, len(exp.Tensors)) // room for a dtype difference on every tensor
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
	embedding := func(v *adapter.View) (adapter.Tensor, bool) {
		for _, name := range embeddingNames {
			if t, ok := v.Tensor(name); ok {
				return t, true
			}
		}
		return adapter.Tensor{}, false
	}
	// lm_head.weight on one side only is no missing or unexpected key when
	// the embeddings are tied: an exported copy of the head is fine (its
	// values are checked against the embedding with --values), a dropped
	// one is reported as tied_weight. Without a config or --tied, a tie is
	// assumed, with a warning, when the embedding has the head's shape.
	headOnOneSide := func(present, absent *adapter.View, absentSide string) (f *Finding, handled bool) {
		head, _ := present.Tensor(LMHead)
		switch {
		case tie.known && tie.tied && absentSide == Published:
			return nil, true
		case tie.known && tie.tied:
			return &Finding{Code: CodeTiedWeight, Severity: Info, Side: absentSide, Key: LMHead,
				Message: fmt.Sprintf("absent from %s; tied to the input embedding (%s)", absentSide, tie.source)}, true
		case tie.known:
			return nil, false
		}
		if emb, ok := embedding(absent); ok && slices.Equal(emb.Shape, head.Shape) {
			return &Finding{Code: CodeTiedWeight, Severity: Warning, Side: absentSide, Key: LMHead,
				Message: fmt.Sprintf("absent from %s; assumed tied to %s (same shape); no config.json or --tied says so", absentSide, emb.Name)}, true
		}
		return nil, false
	}
	matched := 0
	for _, t := range pub.Tensors {
		e, ok := exp.Tensor(t.Name)
		if ok {
			matched++
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
			out = append(out, Finding{Code: CodeMissingKey, Severity: Error, Key: t.Name, Message: "in published, missing from exported"})
			continue
		}
		if !slices.Equal(t.Shape, e.Shape) {
			msg := fmt.Sprintf("published %s, exported %s", safetensors.FormatShape(t.Shape), safetensors.FormatShape(e.Shape))
			if len(t.Shape) == 2 && len(e.Shape) == 2 && t.Shape[0] == e.Shape[1] && t.Shape[1] == e.Shape[0] {
				msg += " (transposed)"
			}
			out = append(out, Finding{Code: CodeShapeMismatch, Severity: Error, Key: t.Name, Message: msg,
				Published: t.Shape, Exported: e.Shape})
		}
		if want == nil && t.DType != e.DType {
			out = append(out, Finding{Code: CodeDTypeMismatch, Severity: Warning, Key: t.Name,
				Message: dtypeMessage(t.DType, e.DType), Published: t.DType, Exported: e.DType})
		}
	}
	for _, e := range exp.Tensors {
		if want != nil && e.DType.IsFloat() && e.DType != *want {
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
		f := Finding{Code: CodeUnexpectedKey, Severity: Error, Side: "", Key: e.Name, Message: "in exported, not in published"}
		if e.Source != e.Name {
			f.Physical = e.Source
		}
		out = append(out, f)
	}
	return out
}
