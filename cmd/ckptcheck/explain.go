package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/ckptcheck/ckptcheck/adapter"
	"github.com/ckptcheck/ckptcheck/safetensors"
	"github.com/ckptcheck/ckptcheck/verify"
)

// An explanation says how one key maps on each side of a diff.
type explanation struct {
	Key   string        `json:"key"`
	Sides []explainSide `json:"sides"`
}

type explainSide struct {
	Side    string `json:"side"`
	Adapter string `json:"adapter"`
	// Logical is the HF tensor named Key, if the side has one.
	Logical *explainTensor `json:"logical,omitempty"`
	// From lists what the physical tensor named Key became on this side.
	From []string `json:"from_physical,omitempty"`
}

type explainTensor struct {
	Name     string            `json:"name"`
	DType    safetensors.DType `json:"dtype"`
	Shape    []uint64          `json:"shape"`
	Source   string            `json:"source"`
	Rule     string            `json:"rule,omitempty"`
	Segments []explainSegment  `json:"segments"`
}

type explainSegment struct {
	File   string `json:"file"`
	Tensor string `json:"tensor"`
	Offset uint64 `json:"offset"`
	Length uint64 `json:"length"`
}

func explain(w io.Writer, format, key string, d *verify.Diffed) error {
	ex := explanation{Key: key}
	for i, side := range []string{verify.Published, verify.Exported} {
		v, src := d.Views[i], d.Sources[i]
		es := explainSide{Side: side, Adapter: v.Adapter}
		if t, ok := v.Tensor(key); ok {
			es.Logical = describeTensor(t, src)
		}
		es.From = fromPhysical(key, v, src)
		ex.Sides = append(ex.Sides, es)
	}
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(ex)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", quote(key))
	for _, es := range ex.Sides {
		fmt.Fprintf(&b, "  %s (adapter %s):", es.Side, es.Adapter)
		if t := es.Logical; t != nil {
			fmt.Fprintf(&b, " %s %s <- %s\n", t.DType, safetensors.FormatShape(t.Shape), quote(t.Source))
			if t.Rule != "" {
				fmt.Fprintf(&b, "    rule %s\n", t.Rule)
			}
			for n, s := range t.Segments {
				if n == 8 {
					fmt.Fprintf(&b, "    ... %d segments in all\n", len(t.Segments))
					break
				}
				fmt.Fprintf(&b, "    bytes %d..%d of %s in %s\n", s.Offset, s.Offset+s.Length, quote(s.Tensor), quote(s.File))
			}
		} else {
			b.WriteString(" no tensor of that name\n")
		}
		for _, f := range es.From {
			fmt.Fprintf(&b, "    the physical %s %s\n", quote(key), f)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func describeTensor(t adapter.Tensor, src []verify.Source) *explainTensor {
	et := &explainTensor{Name: t.Name, DType: t.DType, Shape: t.Shape, Source: t.Source, Rule: t.Rule}
	for _, s := range t.Segments {
		p := src[s.Source]
		et.Segments = append(et.Segments, explainSegment{File: p.Shard.Path, Tensor: p.Info.Name, Offset: s.Offset, Length: s.Length})
	}
	return et
}

// fromPhysical says what became of the physical tensor named key: the
// logical tensors its bytes went to, or why it was left out.
func fromPhysical(key string, v *adapter.View, src []verify.Source) []string {
	var out []string
	for _, t := range v.Tensors {
		for _, s := range t.Segments {
			if src[s.Source].Info.Name == key {
				if t.Name == key {
					break
				}
				out = append(out, "maps to "+quote(t.Name))
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
