package adapter

import (
	"cmp"
	"embed"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/ckptcheck/ckptcheck/safetensors"
)

// A Segment is a byte range [Offset, Offset+Length) of the physical tensor
// Source, an index into the tensors given to Apply.
type Segment struct {
	Source         int
	Offset, Length uint64
	// Transposed says the segment holds whole rows of the tensor (of its
	// last dimension) stored as their transpose, [cols, rows]: concat joins
	// a tensor read transposed with others along their rows so (DeepSeek's
	// kv_b_proj, per head a tile of attn_k_b transposed, then rows of
	// attn_v_b). Readers transpose such a segment's tile as they read it.
	Transposed bool
}

// String is the segment as {source offset length}, "transposed" added
// when it is.
func (s Segment) String() string {
	if s.Transposed {
		return fmt.Sprintf("{%d %d %d transposed}", s.Source, s.Offset, s.Length)
	}
	return fmt.Sprintf("{%d %d %d}", s.Source, s.Offset, s.Length)
}

// A Tensor is a logical tensor of a View: an HF name, a dtype, a shape, and
// the segments that hold its elements in row-major order, or, when
// Transposed, the elements of its transpose.
type Tensor struct {
	Name     string
	DType    safetensors.DType
	Shape    []uint64
	Segments []Segment
	// Transposed says the segments hold, in row-major order, the tensor
	// with its last two dimensions swapped (Shape[:n-2] + [Shape[n-1],
	// Shape[n-2]]): the logical tensor is their transpose, tile by tile.
	// A transposed layout moves no bytes; readers transpose what they read.
	Transposed bool
	// Interleave, when set, says the segments hold len(Interleave) tensors
	// one after the other, each cut into the same number of units, the
	// w-th's units Interleave[w] bytes, and that the tensor's bytes (as
	// stored: before Transposed) are those units taken in turn, one of each
	// tensor a round (concat's groups=: llama.cpp splits gpt-oss's
	// gate_up_proj, whose rows alternate gate and up, into two tensors).
	// The segments stay few; readers interleave what they read. An
	// interleaved tensor is not cut or joined again.
	Interleave []uint64
	// Source says where the tensor came from: the physical name, with the
	// slice taken ("layers.1.moe.experts.w1[3]").
	Source string
	// Rule is the adapter rule that made it ("torchtitan-qwen3:23: unstack
	// ..."), empty for a tensor passed through unchanged.
	Rule string
	// Alias is the transformers rule that renamed the tensor into the
	// other side's Hugging Face naming (see Aliases.Align), and AliasOf
	// its name before; empty when not renamed so.
	Alias, AliasOf string
	// Add, when not 0, is what the logical values are off the stored ones:
	// logical = stored + Add, element by element (a rule's add= option;
	// llama.cpp stores Gemma's norm weights w as w+1, read with Add -1).
	// The bytes are those stored; a value comparison applies it as it
	// decodes.
	Add float64
	// Quant is set on a quantized weight (see View.BindQuant).
	Quant *Quantized
}

// A Collision is two or more tensors mapped to one logical name. The View
// keeps the first.
type Collision struct {
	Name    string
	Sources []string
}

// A Dropped tensor has no counterpart in the other naming scheme; the rule
// that dropped it says why.
type Dropped struct {
	Name, Reason, Rule string
}

// A RuleError is a rule that matched a tensor it cannot map: the shape does
// not fit, or the config lacks a value. The tensor is left out of the view.
type RuleError struct {
	Name, Rule, Message string
}

func (e RuleError) Error() string { return fmt.Sprintf("%s: %s: %s", e.Name, e.Rule, e.Message) }

// A View is a checkpoint as its adapters present it.
type View struct {
	Adapter    string
	Tensors    []Tensor
	Collisions []Collision
	Dropped    []Dropped
	Errors     []RuleError
	// Ignored lists the tensors the adapters leave out as not weights.
	Ignored []string
	// Absent lists the other side's tensors the adapters say this side
	// holds in no form they read (their "absent" lines).
	Absent []Absent
	// Truncated reports that the chain stopped at its limit (see
	// Chain.ApplyLimit): the view holds only the tensors made before, and
	// Errors says where it stopped.
	Truncated bool
	byName    map[string]int
}

// Tensor returns the logical tensor with the given HF name.
func (v *View) Tensor(name string) (Tensor, bool) {
	i, ok := v.byName[name]
	if !ok {
		return Tensor{}, false
	}
	return v.Tensors[i], true
}

// Index returns the place in Tensors of the logical tensor with the given
// HF name, or -1.
func (v *View) Index(name string) int {
	i, ok := v.byName[name]
	if !ok {
		return -1
	}
	return i
}

// An Adapter maps one naming scheme onto Hugging Face names. Presets are
// files in the adapter language (see Parse), embedded in the binary.
type Adapter struct {
	Name     string
	Doc      string
	Families []string // config.json model_type values it is meant for; empty: any
	// Covers lists the framework versions, tags or commit ranges whose names
	// and layouts the adapter was checked against (its covers lines).
	Covers []string
	// Auto and Order say when and in what order "auto" tries it (the auto
	// and order lines of its file; see Candidates).
	Auto   Auto
	Order  int
	Source string // the rule file
	rules  []*rule
	absent []*absentRule
}

func (a *Adapter) String() string { return a.Name }

// fits reports whether the adapter is meant for modelType ("" fits all).
func (a *Adapter) fits(modelType string) bool {
	return len(a.Families) == 0 || modelType == "" || slices.Contains(a.Families, modelType)
}

// Auto says when "auto" tries an adapter; see Candidates.
type Auto int

const (
	// AutoNever: only when named, like hf, the identity, and the adapters
	// that StripPrefix and Rename build.
	AutoNever Auto = iota
	// AutoWrapper: whenever it changes any name; every wrapper that does is
	// applied first, in order (ddp, compile, fsdp).
	AutoWrapper
	// AutoStructural: after the wrappers, one at a time, when it maps any
	// name and its family fits; the default for a parsed adapter.
	AutoStructural
)

var autoNames = [...]string{AutoNever: "never", AutoWrapper: "wrapper", AutoStructural: "structural"}

// String returns the word the auto line uses: "never", "wrapper" or "structural".
func (k Auto) String() string {
	if k < 0 || int(k) >= len(autoNames) {
		return "Auto(" + strconv.Itoa(int(k)) + ")"
	}
	return autoNames[k]
}

// Env holds the config.json values that rule expressions read.
type Env map[string]uint64

// Get returns a config value; head_dim defaults to hidden_size divided by
// num_attention_heads, as transformers computes it.
func (e Env) Get(name string) (uint64, bool) {
	if v, ok := e[name]; ok {
		return v, true
	}
	if name == "head_dim" && e["num_attention_heads"] > 0 && e["hidden_size"]%e["num_attention_heads"] == 0 {
		return e["hidden_size"] / e["num_attention_heads"], e["hidden_size"] > 0
	}
	return 0, false
}

//go:embed presets/*.adapter
var presetFiles embed.FS

// loadedPresets parses the embedded adapter files once, when first needed:
// parsing them all costs milliseconds that validate and inspect, which use
// no adapter, should not pay at start-up.
var loadedPresets = sync.OnceValue(func() []*Adapter {
	p, err := loadPresets(presetFiles)
	if err != nil {
		panic(err) // the embedded files are tested
	}
	return p
})

// loadPresets parses every presets/*.adapter file of fsys, each named as
// its file is, and orders them by their auto kind (never, wrapper,
// structural), then order, then name: so a new preset is a new file.
func loadPresets(fsys fs.FS) ([]*Adapter, error) {
	entries, err := fs.ReadDir(fsys, "presets")
	if err != nil {
		return nil, err
	}
	var out []*Adapter
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".adapter")
		if !ok || e.IsDir() {
			continue
		}
		file := "presets/" + e.Name()
		b, err := fs.ReadFile(fsys, file)
		if err != nil {
			return nil, err
		}
		a, err := Parse(file, string(b))
		if err != nil {
			return nil, err
		}
		if a.Name != name {
			return nil, fmt.Errorf("%s: named %q, not %q", file, a.Name, name)
		}
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b *Adapter) int {
		return cmp.Or(cmp.Compare(a.Auto, b.Auto), cmp.Compare(a.Order, b.Order), strings.Compare(a.Name, b.Name))
	})
	return out, nil
}

// Presets lists the built-in adapters: hf, then the wrappers, then the
// structural ones, each in the order auto tries them.
func Presets() []*Adapter { return slices.Clone(loadedPresets()) }

func preset(name string) *Adapter {
	for _, a := range loadedPresets() {
		if a.Name == name {
			return a
		}
	}
	return nil
}

// A Registry resolves adapter names: the presets, plus adapters the user
// loaded from files, which take precedence.
type Registry struct {
	user []*Adapter
}

// Add registers a user adapter.
func (r *Registry) Add(a *Adapter) { r.user = append(r.user, a) }

// User lists the user's adapters.
func (r *Registry) User() []*Adapter {
	if r == nil {
		return nil
	}
	return r.user
}

// Lookup finds an adapter by name.
func (r *Registry) Lookup(name string) (*Adapter, error) {
	for _, a := range r.User() {
		if a.Name == name {
			return a, nil
		}
	}
	if a := preset(name); a != nil {
		return a, nil
	}
	names := make([]string, len(loadedPresets()))
	for i, a := range loadedPresets() {
		names[i] = a.Name
	}
	return nil, fmt.Errorf("unknown adapter %q (presets: %s)", name, strings.Join(names, ", "))
}

// ParseChain parses a chain of adapter names: "torchtitan-hf,compile".
// The wrappers (auto wrapper: ddp, compile, fsdp) go first, in the order
// written, wherever they are written: their segments may sit anywhere in
// a name (model._orig_mod.model.layers...), and the structural adapters'
// patterns are written for the names without them.
func (r *Registry) ParseChain(spec string) (Chain, error) {
	var wrappers, rest Chain
	for name := range strings.SplitSeq(spec, ",") {
		a, err := r.Lookup(strings.TrimSpace(name))
		switch {
		case err != nil:
			return nil, err
		case a.Name == "hf":
		case a.Auto == AutoWrapper:
			wrappers = append(wrappers, a)
		default:
			rest = append(rest, a)
		}
	}
	return wrappers.Then(rest), nil
}

// A Chain applies adapters in order: each sees the names the previous made.
type Chain []*Adapter

// Name is the chain as the command line writes it: "hf" when empty.
func (c Chain) Name() string {
	if len(c) == 0 {
		return "hf"
	}
	names := make([]string, len(c))
	for i, a := range c {
		names[i] = a.Name
	}
	return strings.Join(names, ",")
}

// Then returns c followed by d.
func (c Chain) Then(d Chain) Chain { return append(slices.Clip(c), d...) }

// StripPrefix is an adapter that removes prefix from names (--strip-prefix).
func StripPrefix(prefix string) *Adapter {
	name := "strip-prefix=" + prefix
	text := "strip-prefix " + prefix
	return &Adapter{Name: name,
		rules: []*rule{{kind: opStripPrefix, literal: prefix, text: text, where: name + ": " + text}}}
}

// Rename is an adapter from "REGEX=REPLACEMENT" (--rename): every match in a
// name is replaced, with $1-style references to groups (Go regexp syntax).
func Rename(spec string) (*Adapter, error) {
	pattern, repl, ok := strings.Cut(spec, "=")
	if !ok || pattern == "" {
		return nil, fmt.Errorf("--rename %q: want REGEX=REPLACEMENT", spec)
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, fmt.Errorf("--rename %q: %v", spec, err)
	}
	name := "rename=" + spec
	text := "regex " + pattern + " " + repl
	lit, _ := re.LiteralPrefix()
	return &Adapter{Name: name,
		rules: []*rule{{kind: opRegex, re: re, reLit: lit, repl: repl, text: text, where: name + ": " + text}}}, nil
}

// Candidates lists the chains that "auto" considers for one side, simplest
// first. The adapters are the user's, in the order given, then the presets
// (a user adapter hides the preset of its name). First come the wrappers
// (auto wrapper) whose rewrites change any of the names, each after those
// before it: together they are the first candidate. Then, after the
// wrappers, each structural adapter (auto structural) that maps any of the
// names and whose family fits modelType (the published config.json's
// model_type; "" fits all). extra (custom renames) runs last in each.
func Candidates(tensors []safetensors.TensorInfo, modelType string, user []*Adapter, extra Chain) []Chain {
	all := slices.Clone(user)
	for _, a := range loadedPresets() {
		if !slices.ContainsFunc(user, func(u *Adapter) bool { return u.Name == a.Name }) {
			all = append(all, a)
		}
	}
	var w Chain
	for _, a := range all {
		if a.Auto == AutoWrapper && a.mapsAny(tensors, w) {
			w = append(w, a)
		}
	}
	out := []Chain{w.Then(extra)}
	var names nameList // after the wrappers, computed for the first structural adapter that fits
	for _, a := range all {
		if a.Auto != AutoStructural || !a.fits(modelType) {
			continue
		}
		if names.names == nil {
			names = namesAfter(tensors, w)
		}
		if a.mapsAnyOf(names) {
			out = append(out, w.Then(Chain{a}).Then(extra))
		}
	}
	return out
}

// A Side is one checkpoint as Choose sees it.
type Side struct {
	Tensors    []safetensors.TensorInfo // its physical tensors
	Candidates []Chain                  // the chains to try, simplest first; none: hf
	// MaxTensors caps the logical tensors a chain may make of them (see
	// Chain.ApplyLimit); 0 leaves only the work bound.
	MaxTensors int
	// Aliases, on the exported side, are the names transformers loads as
	// the published ones: each exported view is aligned to the published
	// view it is matched with (see Aliases.Align).
	Aliases Aliases
}

// Choose picks one candidate chain per side: the pair whose views share the
// most names, a name whose two tensors also have the same shape counting
// twice (so a layout that makes the shapes agree, a transposed one, wins
// over the identity that only matches the names). Each chain is applied
// once: a published one in turn, an exported one when first needed, its
// view kept for the next published one. Ties keep the pair listed first,
// so simpler chains win; a pair that matches as many names, shapes and
// all, as the side with fewer physical tensors has ends the search, since
// that is a whole match; a single candidate fixes a side.
func Choose(published, exported Side, env Env) (pub, exp *View) {
	pubCands, expCands := published.Candidates, exported.Candidates
	if len(pubCands) == 0 {
		pubCands = []Chain{nil}
	}
	if len(expCands) == 0 {
		expCands = []Chain{nil}
	}
	expViews := make([]*View, len(expCands))
	best, most := -1, min(len(published.Tensors), len(exported.Tensors))
	for _, pc := range pubCands {
		pv := pc.ApplyLimit(published.Tensors, env, published.MaxTensors)
		for j, ec := range expCands {
			if expViews[j] == nil {
				expViews[j] = ec.ApplyLimit(exported.Tensors, env, exported.MaxTensors)
			}
			ev := exported.Aliases.Align(pv, expViews[j])
			names, shapes := 0, 0
			for _, t := range ev.Tensors {
				if k, ok := pv.byName[t.Name]; ok {
					names++
					if slices.Equal(pv.Tensors[k].Shape, t.Shape) {
						shapes++
					}
				}
			}
			if names+shapes > best {
				best, pub, exp = names+shapes, pv, ev
			}
			if shapes >= most {
				return pub, exp
			}
		}
	}
	return pub, exp
}
