package verify

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/ckptcheck/ckptcheck/adapter"
	"github.com/ckptcheck/ckptcheck/checkpoint"
	"github.com/ckptcheck/ckptcheck/internal/textfmt"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// An Inspection is what inspect lists: a checkpoint's tensors, their
// totals, and optionally the module tree.
type Inspection struct {
	Tensors []TensorRow `json:"tensors"`
	Totals  Totals      `json:"totals"`
	Tree    *TreeNode   `json:"tree,omitempty"`
	// Filter is the glob the tensors were filtered by, if any.
	Filter string `json:"filter,omitempty"`
	// Adapter describes a LoRA adapter (inspect_adapter.go), nil for a model.
	Adapter *AdapterInspection `json:"adapter,omitempty"`
}

// A VariantInspection is the inspection of one checkpoint of a folder
// holding several, named by its variant and path; its fields are inlined.
type VariantInspection struct {
	Variant string `json:"variant"`
	Path    string `json:"path"`
	*Inspection
}

// A TensorRow is one tensor of an inspection.
type TensorRow struct {
	Name       string            `json:"name"`
	DType      safetensors.DType `json:"dtype"`
	Shape      []uint64          `json:"shape"`
	Parameters uint64            `json:"parameters"`
	Bytes      uint64            `json:"bytes"`
	File       string            `json:"file"`
	// Encoding names a quantized weight's encoding (its codec; a GGUF
	// tensor's GGML type, such as Q4_K, whose DType is then U8); the row
	// is then the logical weight: its dequantized shape and parameters,
	// and the bytes of all its parts.
	Encoding string `json:"encoding,omitempty"`
}

// Totals sums an inspection's tensors.
type Totals struct {
	Tensors    int                     `json:"tensors"`
	Parameters uint64                  `json:"parameters"`
	Bytes      uint64                  `json:"bytes"`
	Files      int                     `json:"files"`
	ByDType    map[string]*DTypeTotals `json:"by_dtype"`
	Metadata   map[string]string       `json:"metadata,omitempty"`
}

// DTypeTotals sums the tensors of one dtype.
type DTypeTotals struct {
	Tensors    int    `json:"tensors"`
	Parameters uint64 `json:"parameters"`
	Bytes      uint64 `json:"bytes"`
}

// Inspect lists the tensors of c whose names match filter (all when nil),
// sorted with numbers in names by value (layers.2 before layers.10), and
// builds the module tree when tree is set.
func Inspect(c *checkpoint.Checkpoint, filter *adapter.Glob, tree bool) *Inspection {
	ins := &Inspection{Tensors: make([]TensorRow, 0, c.NumTensors()), Totals: Totals{ByDType: map[string]*DTypeTotals{}}}
	if filter != nil {
		ins.Filter = filter.String()
	}
	weights, companions := quantRows(c)
	for _, s := range c.Shards {
		if isGGUF(s) {
			ins.inspectFile(s, func(name string) bool { return filter == nil || filter.Match(name) })
			continue
		}
		if s.Header == nil {
			continue
		}
		ins.Totals.Files++
		for k, v := range s.Header.Meta() {
			if ins.Totals.Metadata == nil {
				ins.Totals.Metadata = map[string]string{}
			}
			ins.Totals.Metadata[k] = v
		}
		for _, t := range headerTensors(s) {
			n, _ := t.NumElements()
			row := TensorRow{Name: t.Name, DType: t.DType, Shape: t.Shape, Parameters: n, Bytes: t.Size(), File: s.Name}
			if companions[t.Name] {
				continue // part of its weight's row
			}
			if q, ok := weights[t.Name]; ok {
				row = q
				row.File = s.Name
			}
			if filter != nil && !filter.Match(row.Name) {
				continue
			}
			ins.Tensors = append(ins.Tensors, row)
			ins.add(t.DType.String(), row.Parameters, row.Bytes)
		}
	}
	ins.Adapter = inspectAdapter(c)
	ins.finish(tree)
	return ins
}

// finish sorts the rows by name and builds the tree if asked.
func (ins *Inspection) finish(tree bool) {
	slices.SortFunc(ins.Tensors, func(a, b TensorRow) int { return NaturalCompare(a.Name, b.Name) })
	if tree {
		ins.Tree = ins.tree()
	}
}

// A TreeNode is a module in the tree view. Children that differ only in a
// layer index are merged into one node named like "layers.{0..35}".
type TreeNode struct {
	Name       string      `json:"name"`
	Parameters uint64      `json:"parameters"`
	Tensors    int         `json:"tensors"`
	Children   []*TreeNode `json:"children,omitempty"`
	index      map[string]*TreeNode
}

func (ins *Inspection) tree() *TreeNode {
	root := &TreeNode{Name: "(root)"}
	for _, t := range ins.Tensors {
		n := root
		n.Parameters += t.Parameters
		n.Tensors++
		for seg := range strings.SplitSeq(t.Name, ".") {
			n = n.child(seg)
			n.Parameters += t.Parameters
			n.Tensors++
		}
	}
	root.collapse()
	return root
}

// child finds or adds the child called name; a map keeps this linear in a
// hostile header's million siblings.
func (n *TreeNode) child(name string) *TreeNode {
	if c, ok := n.index[name]; ok {
		return c
	}
	if n.index == nil {
		n.index = make(map[string]*TreeNode)
	}
	c := &TreeNode{Name: name}
	n.index[name] = c
	n.Children = append(n.Children, c)
	return c
}

// collapse merges numeric children (layer indices) into one "{a..b}" child
// whose subtree sums theirs, and folds the merged child into its parent's
// name: "layers" with children 0..35 becomes "layers.{0..35}".
func (n *TreeNode) collapse() {
	var numeric []int
	var others []*TreeNode
	var merged *TreeNode
	for _, c := range n.Children {
		if i, err := strconv.Atoi(c.Name); err == nil && i >= 0 && strconv.Itoa(i) == c.Name {
			numeric = append(numeric, i)
			if merged == nil {
				merged = &TreeNode{}
			}
			merged.merge(c)
			continue
		}
		others = append(others, c)
	}
	if len(numeric) > 1 {
		merged.Name = "{" + textfmt.IndexRanges(numeric) + "}"
		n.Children = append([]*TreeNode{merged}, others...)
	}
	for _, c := range n.Children {
		c.collapse()
	}
	// A node whose only child is a merged index range reads better as one line.
	if len(n.Children) == 1 && strings.HasPrefix(n.Children[0].Name, "{") {
		c := n.Children[0]
		n.Name += "." + c.Name
		n.Children = c.Children
	}
}

func (n *TreeNode) merge(o *TreeNode) {
	n.Parameters += o.Parameters
	n.Tensors += o.Tensors
	for _, oc := range o.Children {
		n.child(oc.Name).merge(oc)
	}
}

// NaturalCompare orders names with numbers by value: layers.2 before
// layers.10. It scans the common prefix bytewise, so sorting tens of
// thousands of similar names stays cheap.
func NaturalCompare(a, b string) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	// Compare the numbers that the first difference falls in, if any.
	start := i
	for start > 0 && isDigit(a[start-1]) {
		start--
	}
	ea, eb := digitsEnd(a, start), digitsEnd(b, start)
	if ea > start && eb > start {
		na, nb := strings.TrimLeft(a[start:ea], "0"), strings.TrimLeft(b[start:eb], "0")
		if c := cmp.Compare(len(na), len(nb)); c != 0 {
			return c
		}
		if c := strings.Compare(na, nb); c != 0 {
			return c
		}
		if c := NaturalCompare(a[ea:], b[eb:]); c != 0 {
			return c
		}
		return strings.Compare(a, b) // equal values written differently: 01 vs 1
	}
	return strings.Compare(a[i:], b[i:])
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func digitsEnd(s string, i int) int {
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	return i
}

// add counts a tensor of typ (a dtype or an encoding) in the totals.
func (ins *Inspection) add(typ string, params, bytes uint64) {
	ins.Totals.Tensors++
	ins.Totals.Parameters += params
	ins.Totals.Bytes += bytes
	d := ins.Totals.ByDType[typ]
	if d == nil {
		d = &DTypeTotals{}
		ins.Totals.ByDType[typ] = d
	}
	d.Tensors++
	d.Parameters += params
	d.Bytes += bytes
}

// Type is the row's encoding when it has one, else its dtype.
func (r TensorRow) Type() string {
	if r.Encoding != "" {
		return r.Encoding
	}
	return r.DType.String()
}
