package adapter

// Writing an inference as an adapter file: the rule language a preset is
// written in, so the diff reads it as it reads a preset.

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// captureOf names the capture of index dimension k.
func captureOf(k int) string { return "{i" + strconv.Itoa(k) + "}" }

// patternOf writes a template as a rule pattern, index k captured as {ik}.
func patternOf(t *nameTemplate) string {
	segs := slices.Clone(t.segs)
	for k, at := range t.at {
		segs[at] = captureOf(k)
	}
	return strings.Join(segs, ".")
}

// destOf writes published template t as a rule template for candidate c:
// its index dimensions take the exported captures in order, the expert
// dimension of an unstack {e}.
func destOf(t *nameTemplate, c *candidate) string {
	segs := slices.Clone(t.segs)
	k := 0
	for d, at := range t.at {
		if c.kind == opUnstack && d == c.expertDim {
			segs[at] = "{e}"
			continue
		}
		segs[at] = captureOf(k)
		k++
	}
	return strings.Join(segs, ".")
}

// ruleText writes candidate c as rule lines: its mapping, and, each after a
// "then", the transposes and the permutations of its targets.
func (inf *Inference) ruleText(c *candidate) string {
	stages := inf.ruleLines(c)
	s := strings.Join(stages[0], "\n") + "\n"
	for _, st := range stages[1:] {
		if len(st) > 0 {
			s += "then\n" + strings.Join(st, "\n") + "\n"
		}
	}
	return s
}

// ruleLines writes candidate c's rules by stage: its mapping, the
// transposes of a transposed split's parts, the permutations of its
// targets.
func (inf *Inference) ruleLines(c *candidate) (stages [3][]string) {
	src := patternOf(inf.exp[c.exp])
	var dsts, sizes []string
	for _, t := range c.targets {
		dsts = append(dsts, destOf(inf.pub[t.pub], c))
		sizes = append(sizes, strconv.FormatUint(t.rows, 10))
		pat := patternOf(inf.pub[t.pub])
		if c.transposed && (c.kind == opSplit || c.kind == opUnstack) {
			stages[1] = append(stages[1], "transpose "+pat+" "+pat)
		}
		if t.heads > 0 {
			stages[2] = append(stages[2], fmt.Sprintf("permute %s %s heads=%d", pat, pat, t.heads))
		}
	}
	var line string
	switch c.kind {
	case opRename:
		line = "rename " + src + " " + dsts[0]
	case opTranspose:
		line = "transpose " + src + " " + dsts[0]
	case opSplit:
		line = fmt.Sprintf("split %s %s groups=%d sizes=%s", src, strings.Join(dsts, " "), c.groups, strings.Join(sizes, ","))
		if c.transposed {
			line += " dim=1"
		}
	case opConcat:
		srcs := []string{src}
		for _, y := range c.parts {
			srcs = append(srcs, patternOf(inf.exp[y]))
		}
		line = "concat " + strings.Join(srcs, "+") + " " + dsts[0] + " dim=0"
		if c.transposed {
			pat := patternOf(inf.pub[c.targets[0].pub])
			stages[1] = append(stages[1], "transpose "+pat+" "+pat)
		}
	case opUnstack:
		line = "unstack " + src + " " + strings.Join(dsts, " ")
		if len(dsts) > 1 {
			line += " sizes=" + strings.Join(sizes, ",")
		}
	}
	stages[0] = []string{line}
	return stages
}

// Text writes the inferred mapping as an adapter file that --adapter-file
// loads: its doc and covers lines say it was inferred and from what, each
// rule is followed by the exported template it maps, and every template
// left open is listed as a comment.
func (inf *Inference) Text() string {
	var b strings.Builder
	b.WriteString("# Inferred by ckptcheck from the tensor names and shapes")
	if inf.settled {
		b.WriteString(" and sampled values")
	}
	b.WriteString(" of two checkpoints.\n# Review every rule before committing it: inference maps what the\n# headers and samples show, not what the framework meant.\n")
	b.WriteString("name   inferred\n")
	b.WriteString("doc    inferred from tensor names, shapes")
	if inf.settled {
		b.WriteString(" and sampled values")
	}
	b.WriteString("; review before use\n")
	if from := sanitizeText(inf.opt.From); from != "" {
		b.WriteString("covers inferred from " + from + "\n")
	}
	b.WriteString("auto   never\n\n")
	var later [2][]string // the transposes, then the permutations
	for x := range inf.exp {
		k := inf.chosen[x]
		if k < 0 || inf.cands[x][k].exp != x {
			continue // unmapped, or written with its concat's first part
		}
		st := inf.ruleLines(&inf.cands[x][k])
		b.WriteString(strings.Join(st[0], "\n") + "\n")
		later[0] = append(later[0], st[1]...)
		later[1] = append(later[1], st[2]...)
	}
	for _, st := range later {
		if len(st) > 0 {
			b.WriteString("\nthen\n" + strings.Join(st, "\n") + "\n")
		}
	}
	if len(inf.conflicts) > 0 {
		b.WriteString("\n# Contradicted by names or layout (see the report's inference_conflict):\n")
		for _, c := range inf.conflicts {
			b.WriteString("#   " + sanitizeText(c.Summary()) + "\n")
		}
	}
	if rep := inf.Report(); len(rep.Ambiguities)+len(rep.Unmapped) > 0 {
		b.WriteString("\n# Not mapped (see the report):\n")
		for _, a := range rep.Ambiguities {
			b.WriteString("#   " + sanitizeText(a.Exported) + ": " + sanitizeText(a.Summary()) + "\n")
		}
		for _, u := range rep.Unmapped {
			b.WriteString("#   " + sanitizeText(u.Exported) + ": " + sanitizeText(u.Why) + "\n")
		}
	}
	return b.String()
}

// sanitizeText makes free text one line of printable characters with no
// "#", so that it cannot end a comment or start a rule.
func sanitizeText(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == '#' || (r >= 0x80 && r < 0xa0) || r == '\u2028' || r == '\u2029' {
			return '?'
		}
		return r
	}, s)
}

// Adapter is the inferred mapping as an adapter named "inferred".
func (inf *Inference) Adapter() (*Adapter, error) {
	return Parse("inferred", inf.Text())
}
