package report

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/ckptcheck/ckptcheck/internal/textfmt"
	"github.com/ckptcheck/ckptcheck/safetensors"
	"github.com/ckptcheck/ckptcheck/verify"
)

// Text writes a report for a terminal: the verdict, the inputs, then the
// findings grouped by code, most severe first. Findings that differ only
// in a layer or expert index are collapsed unless opt.Verbose is set.
// An inspection lists its tensors first; an explanation is all it shows.
func Text(w io.Writer, r *verify.Report, opt Options) error {
	if r.Explanation != nil {
		return writeExplanation(w, r.Explanation)
	}
	var b strings.Builder
	if r.Inspection != nil || len(r.Inspections) > 0 {
		if err := writeInspections(w, r, opt.Depth); err != nil {
			return err
		}
		if len(r.Findings) == 0 && len(r.Suppressed) == 0 {
			return nil
		}
		b.WriteByte('\n')
	}
	b.WriteString(Verdict(r))
	b.WriteByte('\n')
	for _, in := range r.Inputs {
		b.WriteString("  ")
		if in.Side != "" {
			b.WriteString(string(in.Side) + ": ")
		}
		b.WriteString(quote(in.Path))
		if in.Hub != nil {
			fmt.Fprintf(&b, " (revision %s = commit %s)", quote(in.Hub.Revision), quote(in.Hub.Commit))
		}
		if in.Variant != "" {
			fmt.Fprintf(&b, " [variant %s]", quote(in.Variant))
		}
		fmt.Fprintf(&b, " (%s, %s", plural(len(in.Files), "file"), plural(in.Tensors, "tensor"))
		if in.Adapter != "" {
			b.WriteString(", adapter " + in.Adapter)
		}
		b.WriteString(")\n")
	}
	if r.Merged != nil {
		b.WriteString("  merged: " + r.Merged.String() + "\n")
	}
	if v := r.Values; v != nil {
		writeValues(&b, v)
		if v.Expect.Derived() {
			writeDrift(&b, r)
		}
	}
	for _, g := range groupByCode(r.Findings) {
		fmt.Fprintf(&b, "\n%s %s (%d)\n", g[0].Severity, g[0].Code, len(g))
		for _, line := range renderGroup(g, opt.Verbose) {
			b.WriteString("  " + line + "\n")
		}
	}
	writeSuppressed(&b, r)
	_, err := io.WriteString(w, b.String())
	return err
}

// groupByCode groups findings by code and severity, errors first, codes
// in order of first appearance; a low key overlap, the likeliest cause of
// every other key finding, leads. Groups point into findings: a diff can
// have one finding per tensor, and copying them was most of the rendering
// time.
func groupByCode(findings []verify.Finding) [][]*verify.Finding {
	type group struct {
		code verify.Code
		sev  verify.Severity
	}
	rank := make(map[group]int)
	var groups [][]*verify.Finding
	var last group
	r := -1
	for i := range findings {
		f := &findings[i]
		// Findings come in runs of one code; look the group up once a run.
		if g := (group{f.Code, f.Severity}); g != last || r < 0 {
			var ok bool
			if r, ok = rank[g]; !ok {
				r = len(groups)
				rank[g] = r
				groups = append(groups, nil)
			}
			last = g
		}
		groups[r] = append(groups[r], f)
	}
	slices.SortStableFunc(groups, func(a, b []*verify.Finding) int {
		if lead := leads(a[0]) - leads(b[0]); lead != 0 {
			return lead
		}
		return int(b[0].Severity) - int(a[0].Severity)
	})
	return groups
}

// leads is -1 for the finding that explains the others: a low key overlap.
func leads(f *verify.Finding) int {
	if f.Code == verify.CodeLowKeyOverlap {
		return -1
	}
	return 0
}

func renderGroup(g []*verify.Finding, verbose bool) []string {
	items := collapseGroup(g, verbose)
	lines := make([]string, len(items))
	for i, it := range items {
		lines[i] = it.text
	}
	return lines
}

// A groupLine is one line of a group of findings: its text, how many
// findings it stands for, and their file when they have one in common.
type groupLine struct {
	text  string
	count int
	file  string
}

// collapseGroup is renderGroup with what each line stands for.
func collapseGroup(g []*verify.Finding, verbose bool) []groupLine {
	if verbose {
		lines := make([]groupLine, len(g))
		for i, f := range g {
			lines[i] = groupLine{findingLine(*f, f.Key), 1, f.File}
		}
		return lines
	}
	if g[0].Code == verify.CodeDTypeMismatch {
		return renderDTypes(g)
	}
	// Findings that differ only in the numbers of their keys (layer and
	// expert indices) collapse into one line, as transformers' loading
	// report does: model.layers.{0..35}.self_attn.k_norm.weight.
	// Messages may differ per key (counts, worst elements): the first one
	// stands for the rest.
	type bucket struct {
		first    verify.Finding
		numbers  [][]int // per numeric position, the values seen
		count    int
		messages bool // not all messages are the first's
		file     string
	}
	var order []string
	buckets := make(map[string]*bucket)
	for _, f := range g {
		template, nums := keyTemplate(f.Key)
		id := string(f.Side) + "\x00" + template
		if len(nums) == 0 {
			id += "\x00" + f.File
		}
		b := buckets[id]
		if b == nil {
			b = &bucket{first: *f, numbers: make([][]int, len(nums)), file: f.File}
			buckets[id] = b
			order = append(order, id)
		}
		if f.File != b.file {
			b.file = ""
		}
		b.count++
		b.messages = b.messages || f.Message != b.first.Message
		for i, n := range nums {
			b.numbers[i] = append(b.numbers[i], n)
		}
	}
	var lines []groupLine
	for _, id := range order {
		b := buckets[id]
		if b.count == 1 {
			lines = append(lines, groupLine{findingLine(b.first, b.first.Key), 1, b.file})
			continue
		}
		template, _ := keyTemplate(b.first.Key)
		full := 1
		for i := range b.numbers {
			b.numbers[i] = slices.Compact(slices.Sorted(slices.Values(b.numbers[i])))
			full *= len(b.numbers[i])
			template = strings.Replace(template, "{}", indexSet(b.numbers[i]), 1)
		}
		f := b.first
		f.File = ""
		line := findingLine(f, template)
		switch {
		case b.messages:
			line += fmt.Sprintf(" (the first of %s)", plural(b.count, "key"))
		case full != b.count:
			line += fmt.Sprintf(" (%s)", plural(b.count, "key"))
		}
		lines = append(lines, groupLine{line, b.count, b.file})
	}
	return lines
}

// renderDTypes writes dtype differences as one line per pair of dtypes:
// "398 tensors BF16 → F32".
func renderDTypes(g []*verify.Finding) []groupLine {
	type pair struct{ from, to string }
	var order []pair
	counts := make(map[pair][]*verify.Finding)
	var last pair
	var run []*verify.Finding
	flush := func() {
		if len(run) > 0 {
			if counts[last] == nil {
				order = append(order, last)
			}
			counts[last] = append(counts[last], run...)
		}
	}
	for _, f := range g {
		p := pair{detailText(f.Published), detailText(f.Exported)}
		if f.Expected != nil {
			p = pair{"demanded " + detailText(f.Expected), detailText(f.Got)}
		}
		if p != last { // runs of one pair cost one map update
			flush()
			last, run = p, run[:0:0]
		}
		run = append(run, f)
	}
	flush()
	var lines []groupLine
	for _, p := range order {
		fs := counts[p]
		if len(fs) == 1 {
			lines = append(lines, groupLine{findingLine(*fs[0], fs[0].Key), 1, fs[0].File})
			continue
		}
		lines = append(lines, groupLine{fmt.Sprintf("%s %s → %s", plural(len(fs), "tensor"), p.from, p.to), len(fs), ""})
	}
	return lines
}

// detailText prints a finding's detail; dtypes, the common case, without fmt.
func detailText(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case fmt.Stringer:
		return v.String()
	case string:
		return v
	case []uint64:
		return safetensors.FormatShape(v)
	}
	return fmt.Sprint(v)
}

// findingLine is one finding on a line: where (side, file, key), then the
// message. Everything that came from a file is escaped.
func findingLine(f verify.Finding, key string) string {
	var where []string
	if f.Side != "" {
		where = append(where, string(f.Side))
	}
	if f.File != "" {
		where = append(where, quote(f.File))
	}
	if key != "" {
		where = append(where, quote(key))
	}
	line := quote(f.Message)
	if len(where) > 0 {
		line = strings.Join(where, " ") + ": " + line
	}
	if f.Physical != "" && key == f.Key {
		line += " (stored as " + quote(f.Physical) + ")"
	}
	return line
}

// keyTemplate replaces each all-digit segment of a dotted key with "{}" and
// returns the numbers it replaced.
func keyTemplate(key string) (string, []int) {
	if !strings.ContainsAny(key, "0123456789") {
		return key, nil
	}
	parts := strings.Split(key, ".")
	var nums []int
	for i, p := range parts {
		if n, err := strconv.Atoi(p); err == nil && n >= 0 && strconv.Itoa(n) == p {
			nums = append(nums, n)
			parts[i] = "{}"
		}
	}
	return strings.Join(parts, "."), nums
}

// collapseKeys writes keys that differ only in their numbers once each:
// ["l.0.w", "l.1.w", "b"] is ["l.{0..1}.w", "b"].
func collapseKeys(keys []string) []string {
	var order []string
	nums := map[string][][]int{}
	for _, k := range keys {
		t, n := keyTemplate(k)
		if _, ok := nums[t]; !ok {
			order = append(order, t)
			nums[t] = make([][]int, len(n))
		}
		for i := range min(len(n), len(nums[t])) {
			nums[t][i] = append(nums[t][i], n[i])
		}
	}
	out := make([]string, len(order))
	for i, t := range order {
		s := t
		for _, n := range nums[t] {
			s = strings.Replace(s, "{}", indexSet(n), 1)
		}
		out[i] = s
	}
	return out
}

// indexSet writes the numbers a collapsed key position took: "{0..35}",
// or the number alone when it took one.
func indexSet(nums []int) string {
	r := textfmt.IndexRanges(nums)
	if !strings.ContainsAny(r, ",.") {
		return r
	}
	return "{" + r + "}"
}
