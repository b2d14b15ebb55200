package verify

import (
	"slices"

	"github.com/ckptcheck/ckptcheck/adapter"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// An Explanation says how one key maps on each side of a diff: diff
// --explain.
type Explanation struct {
	Key   string          `json:"key"`
	Sides []ExplainedSide `json:"sides"`
	// Tied is set when Key is lm_head.weight and the embeddings are tied.
	Tied string `json:"tied,omitempty"`
}

// Found reports whether either side knows the key, by its HF name or as a
// physical tensor.
func (e *Explanation) Found() bool {
	for _, s := range e.Sides {
		if s.Logical != nil || len(s.From) > 0 {
			return true
		}
	}
	return false
}

// An ExplainedSide is one side's answer.
type ExplainedSide struct {
	Side    Side   `json:"side"`
	Adapter string `json:"adapter"`
	// Logical is the HF tensor named Key, if the side has one.
	Logical *ExplainedTensor `json:"logical,omitempty"`
	// From lists what the physical tensor named Key became on this side.
	From []string `json:"from_physical,omitempty"`
}

// An ExplainedTensor is a logical tensor and the bytes it is read from.
type ExplainedTensor struct {
	Name   string            `json:"name"`
	DType  safetensors.DType `json:"dtype"`
	Shape  []uint64          `json:"shape"`
	Source string            `json:"source"`
	Rule   string            `json:"rule,omitempty"`
	// Stored is set when the segments hold the tensor transposed: the
	// shape they hold, Shape with its last two dimensions swapped. The
	// values are read a tile at a time and transposed.
	Stored []uint64 `json:"stored_transposed,omitempty"`
	// Interleave is set when the segments hold several tensors whose
	// units of these bytes, one of each in turn, make the tensor's bytes
	// (adapter.Tensor.Interleave).
	Interleave []uint64         `json:"interleave_units,omitempty"`
	Segments   []ExplainedBytes `json:"segments"`
}

// ExplainedBytes is a byte range of a physical tensor.
type ExplainedBytes struct {
	File   string `json:"file"`
	Tensor string `json:"tensor"`
	Offset uint64 `json:"offset"`
	Length uint64 `json:"length"`
	// Transposed says the bytes hold whole rows stored as their transpose
	// (adapter.Segment.Transposed).
	Transposed bool `json:"transposed,omitempty"`
}

// maxExplainedSegments bounds the segments an explanation lists: a permuted
// tensor has one per row.
const maxExplainedSegments = 64

// Explain says how key (an HF name, or a physical name of either side)
// maps on each side.
func (d *Comparison) Explain(key string) *Explanation {
	ex := &Explanation{Key: key}
	for _, m := range []*Mapped{d.Published, d.Exported} {
		es := ExplainedSide{Side: m.Side, Adapter: m.View.Adapter}
		t, ok := m.View.Tensor(key)
		if ok {
			es.Logical = explainTensor(t, m.Sources)
		}
		es.From = fromPhysical(key, m.View, m.Sources)
		if k := m.View.AbsentFor(key); k >= 0 && !ok {
			a := m.View.Absent[k]
			es.From = append(es.From, "is absent from this side: "+a.Reason+" (rule "+a.Rule+")")
		}
		ex.Sides = append(ex.Sides, es)
	}
	if key == LMHead && d.Tie.Tied {
		ex.Tied = "tied to the input embedding (" + d.Tie.Source + "): absent from a side, it is read from the embedding"
	}
	return ex
}

func explainTensor(t adapter.Tensor, src []Source) *ExplainedTensor {
	et := &ExplainedTensor{Name: t.Name, DType: t.DType, Shape: t.Shape, Source: t.Source, Rule: t.Rule, Interleave: t.Interleave}
	if n := len(t.Shape); t.Transposed && n >= 2 {
		et.Stored = slices.Clone(t.Shape)
		et.Stored[n-2], et.Stored[n-1] = et.Stored[n-1], et.Stored[n-2]
	}
	for i, s := range t.Segments {
		if i == maxExplainedSegments {
			break
		}
		p := src[s.Source]
		et.Segments = append(et.Segments, ExplainedBytes{File: p.Shard.Path, Tensor: p.Tensor.Name, Offset: s.Offset, Length: s.Length, Transposed: s.Transposed})
	}
	return et
}

// fromPhysical says what became of the physical tensor named key: the
// logical tensors its bytes went to, or why it was left out.
func fromPhysical(key string, v *adapter.View, src []Source) []string {
	var out []string
	for _, t := range v.Tensors {
		for _, s := range t.Segments {
			if src[s.Source].Tensor.Name == key {
				if t.Name != key {
					out = append(out, "maps to "+t.Name)
				}
				break
			}
		}
	}
	for _, dr := range v.Dropped {
		if dr.Name == key {
			out = append(out, "is dropped: "+dr.Reason+" (rule "+dr.Rule+")")
		}
	}
	for _, e := range v.Errors {
		if e.Name == key {
			out = append(out, "cannot be mapped: "+e.Message+" (rule "+e.Rule+")")
		}
	}
	for _, n := range v.Ignored {
		if n == key {
			out = append(out, "is ignored (not a weight)")
		}
	}
	return out
}
