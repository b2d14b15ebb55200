package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v3"

	"github.com/ckptcheck/ckptcheck/safetensors"
	"github.com/ckptcheck/ckptcheck/verify"
)

func inspectCommand() *cli.Command {
	return &cli.Command{
		Name:      "inspect",
		Usage:     "list a checkpoint's tensors, dtypes, shapes and parameter counts (headers only)",
		ArgsUsage: "PATH",
		Flags: []cli.Flag{
			formatFlag,
			&cli.StringFlag{Name: "filter", Usage: "only tensors whose name matches this glob (* matches any run of characters)"},
			&cli.BoolFlag{Name: "tree", Usage: "show the module tree with parameter counts instead of the tensor list"},
			&cli.IntFlag{Name: "depth", Usage: "with --tree, show this many levels (0: all)"},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if err := needArgs(cmd, 1, 1, "PATH"); err != nil {
				return err
			}
			if cmd.Int("depth") < 0 {
				return usageError("--depth must be 0 or more")
			}
			filter := cmd.String("filter")
			if _, err := path.Match(filter, ""); err != nil {
				return usageError("--filter %q: %v", filter, err)
			}
			c, err := safetensors.OpenCheckpoint(cmd.Args().First())
			if err != nil {
				return err
			}
			defer c.Close()
			ins := newInspection(c, filter)
			rep := verify.NewReport("inspect", verify.Error, []verify.Input{describe(c, "")}, verify.Validate(c))
			w := cmd.Root().Writer
			if cmd.String("format") == "json" {
				ins.Report = rep
				if cmd.Bool("tree") {
					ins.Tree = ins.tree()
				}
				enc := json.NewEncoder(w)
				enc.SetIndent("", "  ")
				err = enc.Encode(ins)
			} else {
				err = ins.writeText(w, rep, cmd.Bool("tree"), int(cmd.Int("depth")))
			}
			if err != nil {
				return err
			}
			if !rep.OK {
				return errFindings
			}
			return nil
		},
	}
}

// An inspection is what `inspect` reports: the report envelope (schema,
// inputs, findings from validation), the tensors and their totals.
type inspection struct {
	*verify.Report
	Tensors []tensorRow `json:"tensors"`
	Totals  totals      `json:"totals"`
	Tree    *treeNode   `json:"tree,omitempty"`
}

type tensorRow struct {
	Name       string            `json:"name"`
	DType      safetensors.DType `json:"dtype"`
	Shape      []uint64          `json:"shape"`
	Parameters uint64            `json:"parameters"`
	Bytes      uint64            `json:"bytes"`
	File       string            `json:"file"`
}

type totals struct {
	Tensors    int                     `json:"tensors"`
	Parameters uint64                  `json:"parameters"`
	Bytes      uint64                  `json:"bytes"`
	Files      int                     `json:"files"`
	ByDType    map[string]*dtypeTotals `json:"by_dtype"`
	Metadata   map[string]string       `json:"metadata,omitempty"`
}

type dtypeTotals struct {
	Tensors    int    `json:"tensors"`
	Parameters uint64 `json:"parameters"`
	Bytes      uint64 `json:"bytes"`
}

// globMatch matches a tensor name against a glob in which * also crosses dots.
func globMatch(pattern, name string) bool {
	ok, _ := path.Match(pattern, name) // '/' is rare in tensor names; treat it as text
	return ok
}

func newInspection(c *safetensors.Checkpoint, filter string) *inspection {
	ins := &inspection{Tensors: make([]tensorRow, 0, c.NumTensors()), Totals: totals{ByDType: map[string]*dtypeTotals{}}}
	for _, s := range c.Shards {
		if s.File == nil {
			continue
		}
		ins.Totals.Files++
		for k, v := range s.File.Metadata {
			if ins.Totals.Metadata == nil {
				ins.Totals.Metadata = map[string]string{}
			}
			ins.Totals.Metadata[k] = v
		}
		for _, t := range s.File.Tensors {
			if filter != "" && !globMatch(filter, t.Name) {
				continue
			}
			n, _ := t.NumElements()
			ins.Tensors = append(ins.Tensors, tensorRow{t.Name, t.DType, t.Shape, n, t.Size(), s.Name})
			ins.Totals.Tensors++
			ins.Totals.Parameters += n
			ins.Totals.Bytes += t.Size()
			d := ins.Totals.ByDType[t.DType.String()]
			if d == nil {
				d = &dtypeTotals{}
				ins.Totals.ByDType[t.DType.String()] = d
			}
			d.Tensors++
			d.Parameters += n
			d.Bytes += t.Size()
		}
	}
	slices.SortFunc(ins.Tensors, func(a, b tensorRow) int { return naturalCompare(a.Name, b.Name) })
	return ins
}

func (ins *inspection) writeText(w io.Writer, rep *verify.Report, tree bool, depth int) error {
	if tree {
		tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
		ins.tree().write(tw, "", depth)
		if err := tw.Flush(); err != nil {
			return err
		}
	} else {
		rows := make([][]string, len(ins.Tensors))
		for i, t := range ins.Tensors {
			rows[i] = []string{quote(t.Name), t.DType.String(), safetensors.FormatShape(t.Shape),
				groupDigits(t.Parameters), humanBytes(t.Bytes), quote(t.File)}
		}
		if err := verify.WriteColumns(w, rows, ""); err != nil {
			return err
		}
	}
	tot := ins.Totals
	var b strings.Builder
	fmt.Fprintf(&b, "\n%d tensors, %s parameters (%s), %s in %d files\n", tot.Tensors,
		groupDigits(tot.Parameters), humanCount(tot.Parameters), humanBytes(tot.Bytes), tot.Files)
	for _, name := range slices.Sorted(maps.Keys(tot.ByDType)) {
		d := tot.ByDType[name]
		fmt.Fprintf(&b, "  %-8s %d tensors, %s parameters, %s\n", name, d.Tensors, humanCount(d.Parameters), humanBytes(d.Bytes))
	}
	for _, k := range slices.Sorted(maps.Keys(tot.Metadata)) {
		fmt.Fprintf(&b, "  metadata %s = %s\n", quote(k), quote(tot.Metadata[k]))
	}
	if len(rep.Findings) > 0 {
		b.WriteString("\n")
		if _, err := io.WriteString(w, b.String()); err != nil {
			return err
		}
		return rep.WriteText(w, false)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// A treeNode is a module in the tree view. Children that differ only in a
// layer index are merged into one node named like "layers.{0..35}".
type treeNode struct {
	Name       string      `json:"name"`
	Parameters uint64      `json:"parameters"`
	Tensors    int         `json:"tensors"`
	Children   []*treeNode `json:"children,omitempty"`
	index      map[string]*treeNode
}

func (ins *inspection) tree() *treeNode {
	root := &treeNode{Name: "(root)"}
	for _, t := range ins.Tensors {
		n := root
		n.Parameters += t.Parameters
		n.Tensors++
		for _, seg := range strings.Split(t.Name, ".") {
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
func (n *treeNode) child(name string) *treeNode {
	if c, ok := n.index[name]; ok {
		return c
	}
	if n.index == nil {
		n.index = make(map[string]*treeNode)
	}
	c := &treeNode{Name: name}
	n.index[name] = c
	n.Children = append(n.Children, c)
	return c
}

// collapse merges numeric children (layer indices) into one "{a..b}" child
// whose subtree sums theirs, and folds the merged child into its parent's
// name: "layers" with children 0..35 becomes "layers.{0..35}".
func (n *treeNode) collapse() {
	var numeric []int
	var others []*treeNode
	var merged *treeNode
	for _, c := range n.Children {
		if i, err := strconv.Atoi(c.Name); err == nil && i >= 0 && strconv.Itoa(i) == c.Name {
			numeric = append(numeric, i)
			if merged == nil {
				merged = &treeNode{}
			}
			merged.merge(c)
			continue
		}
		others = append(others, c)
	}
	if len(numeric) > 1 {
		merged.Name = "{" + verify.IndexRanges(numeric) + "}"
		n.Children = append([]*treeNode{merged}, others...)
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

func (n *treeNode) merge(o *treeNode) {
	n.Parameters += o.Parameters
	n.Tensors += o.Tensors
	for _, oc := range o.Children {
		n.child(oc.Name).merge(oc)
	}
}

// write prints the modules below n. Tensors themselves (the leaves:
// "weight", "bias") are left out below the top level; their module's line
// already counts them.
func (n *treeNode) write(w io.Writer, indent string, depth int) {
	for _, c := range n.Children {
		if len(c.Children) == 0 && indent != "" {
			continue
		}
		noun := "tensors"
		if c.Tensors == 1 {
			noun = "tensor"
		}
		fmt.Fprintf(w, "%s%s\t%s\t%d %s\n", indent, quote(c.Name), humanCount(c.Parameters), c.Tensors, noun)
		if depth != 1 {
			c.write(w, indent+"  ", max(depth-1, 0))
		}
	}
}
