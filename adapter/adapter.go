package adapter

import (
	"embed"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/ckptcheck/ckptcheck/safetensors"
)

// A Segment is a byte range [Offset, Offset+Length) of the physical tensor
// Source, an index into the tensors given to Apply.
type Segment struct {
	Source         int
	Offset, Length uint64
}

// A Tensor is a logical tensor of a View: an HF name, a dtype, a shape, and
// the segments that hold its elements in row-major order.
type Tensor struct {
	Name     string
	DType    safetensors.DType
	Shape    []uint64
	Segments []Segment
	// Source says where the tensor came from: the physical name, with the
	// slice taken ("layers.1.moe.experts.w1[3]").
	Source string
	// Rule is the adapter rule that made it ("torchtitan-qwen3:23: unstack
	// ..."), empty for a tensor passed through unchanged.
	Rule string
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
	// Ignored counts tensors the adapters leave out as not weights.
	Ignored []string
	byName  map[string]int
}

// Tensor returns the logical tensor with the given HF name.
func (v *View) Tensor(name string) (Tensor, bool) {
	i, ok := v.byName[name]
	if !ok {
		return Tensor{}, false
	}
	return v.Tensors[i], true
}

// An Adapter maps one naming scheme onto Hugging Face names. Presets are
// files in the adapter language (see Parse), embedded in the binary.
type Adapter struct {
	Name     string
	Doc      string
	Families []string // config.json model_type values it is meant for; empty: any
	Source   string   // the rule file
	rules    []*rule
}

func (a *Adapter) String() string { return a.Name }

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

// presetOrder is the order presets are listed and tried in.
var presetOrder = []string{"hf", "torchtitan-hf", "ddp", "compile", "fsdp",
	"torchtitan-qwen3", "torchtitan-llama3", "hf-v5-fused", "megatron"}

var presets = func() map[string]*Adapter {
	m := make(map[string]*Adapter)
	for _, name := range presetOrder {
		file := "presets/" + name + ".adapter"
		b, err := presetFiles.ReadFile(file)
		if err != nil {
			panic(err)
		}
		a, err := Parse(file, string(b))
		if err != nil || a.Name != name {
			panic(fmt.Sprintf("preset %s: %v", name, err))
		}
		m[name] = a
	}
	return m
}()

// Presets lists the built-in adapters.
func Presets() []*Adapter {
	out := make([]*Adapter, len(presetOrder))
	for i, name := range presetOrder {
		out[i] = presets[name]
	}
	return out
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
	if a, ok := presets[name]; ok {
		return a, nil
	}
	return nil, fmt.Errorf("unknown adapter %q (presets: %s)", name, strings.Join(presetOrder, ", "))
}

// ParseChain parses a chain of adapter names: "torchtitan-hf,compile".
func (r *Registry) ParseChain(spec string) (Chain, error) {
	var c Chain
	for name := range strings.SplitSeq(spec, ",") {
		a, err := r.Lookup(strings.TrimSpace(name))
		if err != nil {
			return nil, err
		}
		if a.Name != "hf" {
			c = append(c, a)
		}
	}
	return c, nil
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
	return &Adapter{Name: "strip-prefix=" + prefix,
		rules: []*rule{{kind: opStripPrefix, literal: prefix, text: "strip-prefix " + prefix}}}
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
	return &Adapter{Name: "rename=" + spec,
		rules: []*rule{{kind: opRegex, re: re, repl: repl, text: "regex " + pattern + " " + repl}}}, nil
}

// Candidates lists the chains that "auto" considers for one side: the
// wrapper presets whose segments occur in its names (they never occur in HF
// names), then, after them, each preset or user adapter that maps any of
// the names and whose family fits modelType (the published config.json's
// model_type; "" fits all). extra (custom renames) runs last in each.
func Candidates(tensors []safetensors.TensorInfo, modelType string, user []*Adapter, extra Chain) []Chain {
	var w Chain
	for _, name := range []string{"ddp", "compile", "fsdp"} {
		if presets[name].mapsAny(tensors, nil) {
			w = append(w, presets[name])
		}
	}
	out := []Chain{w.Then(extra)}
	structural := append(slices.Clone(user), presets["torchtitan-hf"], presets["torchtitan-qwen3"],
		presets["torchtitan-llama3"], presets["hf-v5-fused"], presets["megatron"])
	for _, a := range structural {
		if len(a.Families) > 0 && modelType != "" && !slices.Contains(a.Families, modelType) {
			continue
		}
		if a.mapsAny(tensors, w) {
			out = append(out, w.Then(Chain{a}).Then(extra))
		}
	}
	return out
}

// Choose applies each pair of candidate chains, one per side, and keeps the
// pair whose views share the most names. Ties keep the pair listed first, so
// simpler chains go first; a single candidate fixes a side.
func Choose(published, exported []safetensors.TensorInfo, pubCands, expCands []Chain, env Env) (pub, exp *View) {
	best, most := -1, min(len(published), len(exported))
	for _, pc := range pubCands {
		pv := pc.Apply(published, env)
		for _, ec := range expCands {
			ev := ec.Apply(exported, env)
			n := 0
			for _, t := range ev.Tensors {
				if _, ok := pv.byName[t.Name]; ok {
					n++
				}
			}
			if n > best {
				best, pub, exp = n, pv, ev
			}
			if best >= most {
				return pub, exp // no pair can match more
			}
		}
	}
	return pub, exp
}
