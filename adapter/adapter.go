package adapter

import (
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

// A Tensor is a logical tensor of a View.
type Tensor struct {
	Name     string
	DType    safetensors.DType
	Shape    []uint64
	Segments []Segment
	// Source is the physical name the tensor came from, for messages.
	Source string
}

// A Collision is two or more physical tensors mapped to one logical name.
// The View keeps the first.
type Collision struct {
	Name    string
	Sources []string
}

// A View is a checkpoint as its adapter presents it: logical tensors by HF
// name, in the order of the physical tensors.
type View struct {
	Adapter    string
	Tensors    []Tensor
	Collisions []Collision
	byName     map[string]int
}

// Tensor returns the logical tensor with the given HF name.
func (v *View) Tensor(name string) (Tensor, bool) {
	i, ok := v.byName[name]
	if !ok {
		return Tensor{}, false
	}
	return v.Tensors[i], true
}

// A step is one renaming rule of a chain: it returns the new name, or the
// name unchanged.
type step struct {
	name   string
	rename func(string) string
}

// An Adapter is a chain of renaming steps, applied in order.
type Adapter struct {
	steps []step
}

// Name is the chain as the command line writes it: "hf" for no steps, else
// the steps joined by commas.
func (a *Adapter) Name() string {
	if a == nil || len(a.steps) == 0 {
		return "hf"
	}
	names := make([]string, len(a.steps))
	for i, s := range a.steps {
		names[i] = s.name
	}
	return strings.Join(names, ",")
}

func (a *Adapter) String() string { return a.Name() }

// MapName returns the HF name of a physical name.
func (a *Adapter) MapName(name string) string {
	if a == nil {
		return name
	}
	for _, s := range a.steps {
		name = s.rename(name)
	}
	return name
}

// Then returns a chain of a's steps followed by b's.
func (a *Adapter) Then(b *Adapter) *Adapter {
	out := &Adapter{}
	if a != nil {
		out.steps = append(out.steps, a.steps...)
	}
	if b != nil {
		out.steps = append(out.steps, b.steps...)
	}
	return out
}

// Apply maps physical tensors to the logical view.
func (a *Adapter) Apply(tensors []safetensors.TensorInfo) *View {
	v := &View{Adapter: a.Name(), Tensors: make([]Tensor, 0, len(tensors)), byName: make(map[string]int, len(tensors))}
	segments := make([]Segment, len(tensors)) // one backing array: a rename is one segment each
	var collided map[string]int
	for i, t := range tensors {
		name := a.MapName(t.Name)
		if j, ok := v.byName[name]; ok {
			if collided == nil {
				collided = make(map[string]int)
			}
			c, seen := collided[name]
			if !seen {
				c = len(v.Collisions)
				collided[name] = c
				v.Collisions = append(v.Collisions, Collision{Name: name, Sources: []string{v.Tensors[j].Source}})
			}
			v.Collisions[c].Sources = append(v.Collisions[c].Sources, t.Name)
			continue
		}
		v.byName[name] = len(v.Tensors)
		segments[i] = Segment{Source: i, Offset: 0, Length: t.Size()}
		v.Tensors = append(v.Tensors, Tensor{Name: name, DType: t.DType, Shape: t.Shape, Source: t.Name,
			Segments: segments[i : i+1 : i+1]})
	}
	return v
}

// Presets lists the built-in adapters with a line each.
var Presets = []struct{ Name, Doc string }{
	{"hf", "identity: the names are Hugging Face names already"},
	{"torchtitan-hf", "strip one leading \"model.\" (torchtitan's transformers backend wraps the HF model)"},
	{"ddp", "remove \"module.\" path segments (torch DistributedDataParallel)"},
	{"compile", "remove \"_orig_mod.\" path segments (torch.compile)"},
	{"fsdp", "remove \"_fsdp_wrapped_module.\" and \"_checkpoint_wrapped_module.\" path segments (FSDP, activation checkpointing)"},
}

// wrappers are the path segments torch wrappers insert, by preset.
var wrappers = map[string][]string{
	"ddp":     {"module"},
	"compile": {"_orig_mod"},
	"fsdp":    {"_fsdp_wrapped_module", "_checkpoint_wrapped_module"},
}

// Preset returns the named built-in adapter.
func Preset(name string) (*Adapter, error) {
	switch name {
	case "hf":
		return &Adapter{}, nil
	case "torchtitan-hf":
		return &Adapter{steps: []step{{name, func(s string) string { return strings.TrimPrefix(s, "model.") }}}}, nil
	}
	if segs, ok := wrappers[name]; ok {
		return &Adapter{steps: []step{{name, func(s string) string { return removeSegments(s, segs) }}}}, nil
	}
	return nil, fmt.Errorf("unknown adapter %q (presets: %s)", name, presetNames())
}

func presetNames() string {
	names := make([]string, len(Presets))
	for i, p := range Presets {
		names[i] = p.Name
	}
	return strings.Join(names, ", ")
}

// Parse parses a chain of presets: "torchtitan-hf,compile".
func Parse(chain string) (*Adapter, error) {
	out := &Adapter{}
	for name := range strings.SplitSeq(chain, ",") {
		p, err := Preset(strings.TrimSpace(name))
		if err != nil {
			return nil, err
		}
		out = out.Then(p)
	}
	return out, nil
}

// StripPrefix removes prefix from the names that start with it.
func StripPrefix(prefix string) *Adapter {
	return &Adapter{steps: []step{{"strip-prefix=" + prefix, func(s string) string { return strings.TrimPrefix(s, prefix) }}}}
}

// Rename parses "REGEX=REPLACEMENT" and replaces every match in a name, with
// $1-style references to the regexp's groups (Go regexp syntax).
func Rename(expr string) (*Adapter, error) {
	pattern, repl, ok := strings.Cut(expr, "=")
	if !ok || pattern == "" {
		return nil, fmt.Errorf("--rename %q: want REGEX=REPLACEMENT", expr)
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, fmt.Errorf("--rename %q: %v", expr, err)
	}
	return &Adapter{steps: []step{{"rename=" + expr, func(s string) string { return re.ReplaceAllString(s, repl) }}}}, nil
}

// removeSegments drops whole dot-separated path segments named in segs.
func removeSegments(name string, segs []string) string {
	if !slices.ContainsFunc(segs, func(seg string) bool { return strings.Contains(name, seg) }) {
		return name
	}
	parts := strings.Split(name, ".")
	kept := parts[:0]
	for _, p := range parts {
		if !slices.Contains(segs, p) {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, ".")
}

// Candidates lists the chains that "auto" considers for one side: the wrapper
// presets whose segments occur in its names (they never occur in HF names),
// then the same with torchtitan-hf, if any name would keep a leading
// "model." to strip; extra (custom renames) runs after each.
func Candidates(tensors []safetensors.TensorInfo, extra *Adapter) []*Adapter {
	w := wrapperChain(tensors)
	out := []*Adapter{w.Then(extra)}
	if slices.ContainsFunc(tensors, func(t safetensors.TensorInfo) bool { return strings.HasPrefix(w.MapName(t.Name), "model.") }) {
		titan, _ := Preset("torchtitan-hf")
		out = append(out, w.Then(titan).Then(extra))
	}
	return out
}

// Choose applies the pair of candidate adapters, one per side, that gives
// the largest exact key overlap between the two views. Ties keep the pair
// listed first, so put the simpler chains first; a single candidate fixes
// a side's adapter.
func Choose(published, exported []safetensors.TensorInfo, pubCands, expCands []*Adapter) (pub, exp *View) {
	best, most := -1, min(len(published), len(exported))
	var bestExp *Adapter
	for _, pa := range pubCands {
		pv := pa.Apply(published)
		for _, ea := range expCands {
			n := 0
			for _, t := range exported {
				if _, ok := pv.byName[ea.MapName(t.Name)]; ok {
					n++
				}
			}
			if n > best {
				best, pub, bestExp = n, pv, ea
			}
			if best == most {
				return pub, bestExp.Apply(exported) // no pair can match more
			}
		}
	}
	return pub, bestExp.Apply(exported)
}

// wrapperChain is the wrapper presets whose segments occur in the names.
func wrapperChain(tensors []safetensors.TensorInfo) *Adapter {
	out := &Adapter{}
	var found map[string]bool
	for _, t := range tensors {
		// Every wrapper segment contains "module" or "_orig_mod"; HF names
		// rarely do, so most names cost two substring searches.
		if !strings.Contains(t.Name, "module") && !strings.Contains(t.Name, "_orig_mod") {
			continue
		}
		for preset, segs := range wrappers {
			if removeSegments(t.Name, segs) != t.Name {
				if found == nil {
					found = make(map[string]bool)
				}
				found[preset] = true
			}
		}
	}
	for _, preset := range []string{"ddp", "compile", "fsdp"} {
		if found[preset] {
			p, _ := Preset(preset)
			out = out.Then(p)
		}
	}
	return out
}
