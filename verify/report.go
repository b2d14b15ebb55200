package verify

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Schema names the JSON report format; renaming or removing a field makes a
// new version.
const Schema = "ckptcheck.report/v1"

// A Report is the outcome of one command: its inputs as resolved and what
// was found. Printing it (WriteText, WriteJSON) is separate from deciding it.
type Report struct {
	Schema   string    `json:"schema"`
	Command  string    `json:"command"`
	OK       bool      `json:"ok"`
	FailOn   Severity  `json:"fail_on"`
	Inputs   []Input   `json:"inputs"`
	Summary  Summary   `json:"summary"`
	Findings []Finding `json:"findings"`
	// Values is the value comparison of diff --values.
	Values *ValueReport `json:"values,omitempty"`
}

// An Input is one checkpoint a command read.
type Input struct {
	Side    string   `json:"side,omitempty"`
	Path    string   `json:"path"`
	Index   string   `json:"index,omitempty"`
	Config  string   `json:"config,omitempty"`
	Files   []string `json:"files"`
	Tensors int      `json:"tensors"`
	Adapter string   `json:"adapter,omitempty"`
}

// Summary counts findings per severity.
type Summary struct {
	Error   int `json:"error"`
	Warning int `json:"warning"`
	Info    int `json:"info"`
}

// NewReport builds a report and decides OK: no finding at or above failOn.
func NewReport(command string, failOn Severity, inputs []Input, findings []Finding) *Report {
	r := &Report{Schema: Schema, Command: command, FailOn: failOn, Inputs: inputs, Findings: findings, OK: true}
	if r.Findings == nil {
		r.Findings = []Finding{}
	}
	for _, f := range findings {
		switch f.Severity {
		case Error:
			r.Summary.Error++
		case Warning:
			r.Summary.Warning++
		default:
			r.Summary.Info++
		}
		if f.Severity >= failOn {
			r.OK = false
		}
	}
	return r
}

// WriteJSON writes the report as one indented JSON document.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// Verdict is the report's first line: "OK" or "FAIL: 2 errors, 1 warning",
// with the counts below the threshold in parentheses after OK.
func (r *Report) Verdict() string {
	var parts []string
	for _, c := range []struct {
		n    int
		name string
	}{{r.Summary.Error, "error"}, {r.Summary.Warning, "warning"}, {r.Summary.Info, "info"}} {
		if c.n > 0 {
			parts = append(parts, plural(c.n, c.name))
		}
	}
	counts := strings.Join(parts, ", ")
	switch {
	case !r.OK:
		return "FAIL: " + counts
	case counts != "":
		return "OK (" + counts + ")"
	}
	return "OK"
}

// WriteText writes the verdict, then the findings grouped by code, most
// severe first. Findings that differ only in a layer index are collapsed
// unless verbose is set.
func (r *Report) WriteText(w io.Writer, verbose bool) error {
	var b strings.Builder
	b.WriteString(r.Verdict())
	b.WriteByte('\n')
	for _, in := range r.Inputs {
		b.WriteString("  ")
		if in.Side != "" {
			b.WriteString(in.Side + ": ")
		}
		fmt.Fprintf(&b, "%s (%s, %s", quoteName(in.Path), plural(len(in.Files), "file"), plural(in.Tensors, "tensor"))
		if in.Adapter != "" {
			b.WriteString(", adapter " + in.Adapter)
		}
		b.WriteString(")\n")
	}
	if v := r.Values; v != nil {
		b.WriteString("  values: " + v.Summary() + "\n")
		if top := topChanges(v.Tensors, 10); len(top) > 0 {
			b.WriteString("\nlargest changes (relative L2, max |Δ| at, cosine)\n")
			rows := make([][]string, len(top))
			for i, t := range top {
				rows[i] = []string{quoteName(t.Key), fmtFloat(float64(t.RelL2)),
					fmtFloat(float64(t.MaxAbsDiff)) + " at " + coords(t.MaxAt), fmt.Sprintf("%.6f", float64(t.Cosine))}
			}
			WriteColumns(&b, rows, "  ")
		}
	}
	for _, g := range groupByCode(r.Findings) {
		fmt.Fprintf(&b, "\n%s %s (%d)\n", g[0].Severity, g[0].Code, len(g))
		for _, line := range renderGroup(g, verbose) {
			b.WriteString("  " + line + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// groupByCode groups findings by code and severity, errors first, codes
// in order of first appearance. Groups point into findings: a diff can have
// one finding per tensor, and copying them was most of the rendering time.
func groupByCode(findings []Finding) [][]*Finding {
	type group struct {
		code string
		sev  Severity
	}
	rank := make(map[group]int)
	var groups [][]*Finding
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
	slices.SortStableFunc(groups, func(a, b []*Finding) int { return int(b[0].Severity) - int(a[0].Severity) })
	return groups
}

func renderGroup(g []*Finding, verbose bool) []string {
	if verbose {
		lines := make([]string, len(g))
		for i, f := range g {
			lines[i] = findingLine(*f, f.Key)
		}
		return lines
	}
	if g[0].Code == CodeDTypeMismatch {
		return renderDTypes(g)
	}
	// Findings that differ only in the numbers of their keys (layer and
	// expert indices) collapse into one line, as transformers' loading
	// report does: model.layers.{0..35}.self_attn.k_norm.weight.
	// Messages may differ per key (counts, worst elements): the first one
	// stands for the rest.
	type bucket struct {
		first    Finding
		numbers  [][]int // per numeric position, the values seen
		count    int
		messages bool // not all messages are the first's
	}
	var order []string
	buckets := make(map[string]*bucket)
	for _, f := range g {
		template, nums := keyTemplate(f.Key)
		id := f.Side + "\x00" + template
		if len(nums) == 0 {
			id += "\x00" + f.File
		}
		b := buckets[id]
		if b == nil {
			b = &bucket{first: *f, numbers: make([][]int, len(nums))}
			buckets[id] = b
			order = append(order, id)
		}
		b.count++
		b.messages = b.messages || f.Message != b.first.Message
		for i, n := range nums {
			b.numbers[i] = append(b.numbers[i], n)
		}
	}
	var lines []string
	for _, id := range order {
		b := buckets[id]
		if b.count == 1 {
			lines = append(lines, findingLine(b.first, b.first.Key))
			continue
		}
		template, _ := keyTemplate(b.first.Key)
		full := 1
		for i := range b.numbers {
			b.numbers[i] = slices.Compact(slices.Sorted(slices.Values(b.numbers[i])))
			full *= len(b.numbers[i])
			template = strings.Replace(template, "{}", "{"+IndexRanges(b.numbers[i])+"}", 1)
		}
		f := b.first
		f.File = ""
		line := findingLine(f, template)
		switch {
		case b.messages:
			line += fmt.Sprintf(" (the first of %d keys)", b.count)
		case full != b.count:
			line += fmt.Sprintf(" (%d keys)", b.count)
		}
		lines = append(lines, line)
	}
	return lines
}

// renderDTypes writes dtype differences as one line per pair of dtypes:
// "398 tensors BF16 → F32".
func renderDTypes(g []*Finding) []string {
	type pair struct{ from, to any }
	var order []pair
	counts := make(map[pair][]*Finding)
	var last pair
	var run []*Finding
	flush := func() {
		if len(run) > 0 {
			if counts[last] == nil {
				order = append(order, last)
			}
			counts[last] = append(counts[last], run...)
		}
	}
	for _, f := range g {
		p := pair{f.Published, f.Exported}
		if f.Expected != nil {
			p = pair{f.Expected, f.Got}
		}
		if p != last { // runs of one pair cost one map update
			flush()
			last, run = p, run[:0:0]
		}
		run = append(run, f)
	}
	flush()
	var lines []string
	for _, p := range order {
		fs := counts[p]
		if len(fs) == 1 {
			lines = append(lines, findingLine(*fs[0], fs[0].Key))
			continue
		}
		from := detailText(p.from)
		if fs[0].Expected != nil {
			from = "demanded " + from
		}
		lines = append(lines, fmt.Sprintf("%s %s → %s", plural(len(fs), "tensor"), from, detailText(p.to)))
	}
	return lines
}

// detailText prints a finding's detail; dtypes, the common case, without fmt.
func detailText(v any) string {
	if s, ok := v.(fmt.Stringer); ok {
		return s.String()
	}
	return fmt.Sprint(v)
}

func findingLine(f Finding, key string) string {
	var where []string
	if f.Side != "" {
		where = append(where, f.Side)
	}
	if f.File != "" {
		where = append(where, quoteName(f.File))
	}
	if key != "" {
		where = append(where, quoteName(key))
	}
	line := quoteName(f.Message)
	if len(where) > 0 {
		line = strings.Join(where, " ") + ": " + line
	}
	if f.Physical != "" && key == f.Key {
		line += " (stored as " + quoteName(f.Physical) + ")"
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

// IndexRanges writes numbers as sorted ranges: "0..35" or "0..3,5,7..9".
func IndexRanges(nums []int) string {
	nums = slices.Compact(slices.Sorted(slices.Values(nums)))
	var parts []string
	for i := 0; i < len(nums); {
		j := i
		for j+1 < len(nums) && nums[j+1] == nums[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d..%d", nums[i], nums[j]))
		} else {
			parts = append(parts, strconv.Itoa(nums[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// WriteColumns writes rows as left-aligned columns two spaces apart, each
// line after indent. It does what text/tabwriter does for this case at a
// fraction of the cost, which matters for 18,000-row listings.
func WriteColumns(w io.Writer, rows [][]string, indent string) error {
	var widths []int
	for _, r := range rows {
		for i, cell := range r {
			if i == len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], utf8.RuneCountInString(cell))
		}
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	for _, r := range rows {
		bw.WriteString(indent)
		for i, cell := range r {
			bw.WriteString(cell)
			if i < len(r)-1 {
				bw.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(cell)+2))
			}
		}
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if strings.HasSuffix(noun, "s") {
		return strconv.Itoa(n) + " " + noun + "es"
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// quoteName escapes a name that holds control or non-printing characters,
// so that a hostile tensor name cannot rewrite the terminal.
func quoteName(s string) string {
	for _, r := range s {
		if !unicode.IsPrint(r) || r == unicode.ReplacementChar {
			q := strconv.QuoteToGraphic(s)
			return q[1 : len(q)-1]
		}
	}
	return s
}
