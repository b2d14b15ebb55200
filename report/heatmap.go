package report

import (
	"cmp"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/ckptcheck/ckptcheck/internal/textfmt"
	"github.com/ckptcheck/ckptcheck/verify"
)

// A cell status, worst first: a cell of several tensors (the experts of a
// layer) shows the worst of theirs.
const (
	statusMissing       = "missing"       // published, not exported
	statusUnexpected    = "unexpected"    // exported, not published
	statusReinitialized = "reinitialized" // values unrelated to the published ones
	statusNonFinite     = "nonfinite"     // NaN or Inf where the published value is finite
	statusDrift         = "drift"         // --expect derived: changed beyond the drift bound
	statusMismatched    = "mismatched"    // shapes differ: values not comparable
	statusSkipped       = "skipped"       // not compared (policy skip, dtypes)
	statusChanged       = "changed"       // compared, values differ: coloured by relative L2
	statusUnchanged     = "unchanged"     // compared, relative L2 0
)

var statusRank = sync.OnceValue(func() map[string]int {
	return map[string]int{statusMissing: 0, statusUnexpected: 1, statusReinitialized: 2, statusNonFinite: 3,
		statusDrift: 4, statusMismatched: 5, statusSkipped: 6, statusChanged: 7, statusUnchanged: 8}
})

// statusDoc is the legend's text for each status but changed; drift is
// only ever seen, and so only in the legend, under --expect derived.
var statusDoc = []struct{ status, label, glyph string }{
	{statusUnchanged, "unchanged (relative L2 0)", "="},
	{statusMissing, "missing from the export", "×"},
	{statusUnexpected, "only in the export", "+"},
	{statusMismatched, "shape mismatch", "≠"},
	{statusReinitialized, "re-initialized", "R"},
	{statusNonFinite, "NaN or Inf", "!"},
	{statusSkipped, "not compared", "–"},
	{statusDrift, "changed beyond the drift bound", "»"},
}

func glyphOf(status string) string {
	for _, d := range statusDoc {
		if d.status == status {
			return d.glyph
		}
	}
	return ""
}

// A heatCell is one tensor, or the experts of one kind in one layer.
type heatCell struct {
	Label  string   `json:"label,omitempty"` // for the rows outside the layers: the tensor's name
	Span   int      `json:"-"`               // for those rows: the columns the cell spans
	Keys   []string `json:"keys"`
	Status string   `json:"status"`
	// RelL2 is the largest relative L2 change of the cell's compared
	// tensors; MeanRelL2 their mean; null when none has one.
	RelL2     verify.Float `json:"rel_l2"`
	MeanRelL2 verify.Float `json:"mean_rel_l2"`
	Color     string       `json:"color"`
	Tip       string       `json:"-"`
	Glyph     string       `json:"-"`
	Dark      bool         `json:"-"` // a dark background: light text
}

type heatRow struct {
	Label string      `json:"label"`
	Kind  string      `json:"kind"`  // layer, embedding, head or other
	Cells []*heatCell `json:"cells"` // layer rows: one per column, nil where the layer has no such tensor
}

// A heatmap is the per-tensor change of a diff --values, layers × tensor
// kinds.
type heatmap struct {
	Columns []string   `json:"columns"`
	Rows    []*heatRow `json:"rows"`
	// LogMin and LogMax are the colour scale's ends, powers of ten.
	LogMin int `json:"log_min"`
	LogMax int `json:"log_max"`
}

// layerKey splits a key of a layer stack: model.layers.3.self_attn.q_proj.weight
// is stack "model.layers", layer 3, rest "self_attn.q_proj.weight".
// Compiled when first used, like expertIndex: not at start-up.
var layerKey = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(.*?(?:^|\.)(?:layers|layer|h|blocks))\.(\d+)\.(.+)$`)
})

// expertIndex matches the expert number in a layer's key, which cells
// aggregate over.
var expertIndex = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(^|\.)experts\.\d+\.`) })

// columnOrder is the order of the usual kinds; others follow, sorted.
var columnOrder = []string{"q_proj", "k_proj", "v_proj", "o_proj", "q_norm", "k_norm", "gate_proj", "up_proj", "down_proj",
	"gate", "experts.gate_proj", "experts.up_proj", "experts.down_proj", "shared_expert_gate", "shared_expert.gate_proj",
	"shared_expert.up_proj", "shared_expert.down_proj", "input_layernorm", "post_attention_layernorm"}

// kindOf is a layer tensor's column: its path in the layer without the
// module it sits in (self_attn, mlp) and without ".weight"; experts lose
// their number.
func kindOf(rest string) string {
	rest = expertIndex().ReplaceAllString(rest, "${1}experts.")
	rest = strings.TrimSuffix(rest, ".weight")
	for _, m := range []string{"self_attn.", "mlp.", "attention.", "attn.", "feed_forward.", "block_sparse_moe."} {
		if r, ok := strings.CutPrefix(rest, m); ok {
			return r
		}
	}
	return rest
}

// tensorStatus is each tensor's status from the findings and statistics.
func tensorStatus(r *verify.Report) (map[string]string, map[string]*verify.TensorStats) {
	status := map[string]string{}
	set := func(key, s string) {
		if old, ok := status[key]; !ok || statusRank()[s] < statusRank()[old] {
			status[key] = s
		}
	}
	stats := map[string]*verify.TensorStats{}
	if r.Values != nil {
		for i := range r.Values.Tensors {
			t := &r.Values.Tensors[i]
			stats[t.Key] = t
			switch {
			case t.Skipped != "":
				set(t.Key, statusSkipped)
			case float64(t.RelL2) == 0 || (t.BitIdentical && !t.RelL2.Defined()):
				set(t.Key, statusUnchanged)
			default:
				set(t.Key, statusChanged)
			}
		}
	}
	for _, f := range r.Findings {
		if f.Key == "" {
			continue
		}
		switch f.Code {
		case verify.CodeMissingKey:
			set(f.Key, statusMissing)
		case verify.CodeUnexpectedKey:
			set(f.Key, statusUnexpected)
		case verify.CodeReinitialized:
			set(f.Key, statusReinitialized)
		case verify.CodeNonFinite:
			set(f.Key, statusNonFinite)
		case verify.CodeDriftExcessive:
			set(f.Key, statusDrift)
		case verify.CodeShapeMismatch:
			set(f.Key, statusMismatched)
		}
	}
	return status, stats
}

// buildHeatmap lays out a diff --values: a row per layer, a column per
// tensor kind, a row each for the embedding, the head (and final norm), and
// the tensors that are in neither.
func buildHeatmap(r *verify.Report) *heatmap {
	status, stats := tensorStatus(r)
	if len(status) == 0 {
		return nil
	}
	keys := make([]string, 0, len(status))
	for k := range status {
		keys = append(keys, k)
	}
	slices.Sort(keys)

	type layerID struct {
		stack string
		n     int
	}
	layerCells := map[layerID]map[string]*heatCell{}
	columns := map[string]bool{}
	stacks := map[string]bool{}
	special := map[string]*heatRow{}
	for _, k := range keys {
		if m := layerKey().FindStringSubmatch(k); m != nil {
			n, err := strconv.Atoi(m[2])
			if err == nil && n < 1<<20 {
				id := layerID{m[1], n}
				stacks[m[1]] = true
				col := kindOf(m[3])
				columns[col] = true
				if layerCells[id] == nil {
					layerCells[id] = map[string]*heatCell{}
				}
				c := layerCells[id][col]
				if c == nil {
					c = &heatCell{}
					layerCells[id][col] = c
				}
				c.Keys = append(c.Keys, k)
				continue
			}
		}
		kind, label := "other", strings.TrimSuffix(strings.TrimPrefix(k, "model."), ".weight")
		switch {
		case strings.Contains(k, "embed") || strings.HasPrefix(k, "wte.") || strings.Contains(k, ".wte.") || strings.Contains(k, ".wpe."):
			kind = "embedding"
		case strings.Contains(k, "lm_head") || strings.HasSuffix(k, "norm.weight") || strings.HasSuffix(k, "norm.bias") || strings.Contains(k, "ln_f."):
			kind = "head"
		}
		row := special[kind]
		if row == nil {
			row = &heatRow{Label: kind, Kind: kind}
			special[kind] = row
		}
		row.Cells = append(row.Cells, &heatCell{Label: quote(label), Keys: []string{k}})
	}

	hm := &heatmap{}
	for _, c := range columnOrder {
		if columns[c] {
			hm.Columns = append(hm.Columns, c)
			delete(columns, c)
		}
	}
	var rest []string
	for c := range columns {
		rest = append(rest, c)
	}
	slices.Sort(rest)
	hm.Columns = append(hm.Columns, rest...)

	// The rows outside the layers hold a cell per tensor, each spanning a
	// few columns, wrapped onto more rows when there are many.
	width := max(len(hm.Columns), 1)
	var specials = map[string][]*heatRow{}
	for kind, row := range special {
		per := max(1, min(len(row.Cells), width))
		for i := 0; i < len(row.Cells); i += per {
			r := &heatRow{Label: row.Label, Kind: row.Kind, Cells: row.Cells[i:min(i+per, len(row.Cells))]}
			if i > 0 {
				r.Label = ""
			}
			for _, c := range r.Cells {
				c.Span = width / per
			}
			specials[kind] = append(specials[kind], r)
		}
	}
	hm.Rows = append(hm.Rows, specials["embedding"]...)
	ids := make([]layerID, 0, len(layerCells))
	for id := range layerCells {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b layerID) int { return cmp.Or(cmp.Compare(a.stack, b.stack), cmp.Compare(a.n, b.n)) })
	for _, id := range ids {
		label := strconv.Itoa(id.n)
		if len(stacks) > 1 {
			label = quote(id.stack) + "." + label
		}
		row := &heatRow{Label: label, Kind: "layer", Cells: make([]*heatCell, len(hm.Columns))}
		for i, col := range hm.Columns {
			row.Cells[i] = layerCells[id][col]
		}
		hm.Rows = append(hm.Rows, row)
	}
	hm.Rows = append(hm.Rows, specials["head"]...)
	hm.Rows = append(hm.Rows, specials["other"]...)

	// The colour scale spans the decades of the changes seen.
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, row := range hm.Rows {
		for _, c := range row.Cells {
			if c == nil {
				continue
			}
			c.summarize(status, stats)
			if c.Status == statusChanged && c.RelL2.Defined() && c.RelL2 > 0 {
				lo = min(lo, math.Log10(float64(c.RelL2)))
				hi = max(hi, math.Log10(float64(c.RelL2)))
			}
		}
	}
	if math.IsInf(lo, 1) {
		lo, hi = -6, 0
	}
	hm.LogMin, hm.LogMax = int(math.Floor(lo)), int(math.Ceil(hi))
	if hm.LogMax <= hm.LogMin {
		hm.LogMax = hm.LogMin + 1
	}
	for _, row := range hm.Rows {
		for _, c := range row.Cells {
			if c != nil {
				c.paint(hm.LogMin, hm.LogMax)
			}
		}
	}
	return hm
}

// summarize sets a cell's status (the worst of its tensors'), its largest
// and mean relative L2, and the text shown on hover.
func (c *heatCell) summarize(status map[string]string, stats map[string]*verify.TensorStats) {
	c.Status = statusUnchanged
	worst, sum, n := -1.0, 0.0, 0
	var worstKey string
	counts := map[string]int{}
	for _, k := range c.Keys {
		s := status[k]
		counts[s]++
		if statusRank()[s] < statusRank()[c.Status] {
			c.Status = s
		}
		if t := stats[k]; t != nil && t.Skipped == "" && t.RelL2.Defined() {
			v := float64(t.RelL2)
			sum += v
			n++
			if v > worst {
				worst, worstKey = v, k
			}
		}
	}
	c.RelL2, c.MeanRelL2 = verify.Float(math.NaN()), verify.Float(math.NaN())
	if n > 0 {
		c.RelL2, c.MeanRelL2 = verify.Float(worst), verify.Float(sum/float64(n))
	}

	var tip strings.Builder
	if len(c.Keys) == 1 {
		k := c.Keys[0]
		tip.WriteString(quote(k) + "\n" + c.Status)
		if t := stats[k]; t != nil {
			tip.WriteString("\n" + statsText(t))
		}
		c.Tip = tip.String()
		return
	}
	var parts []string
	for _, d := range []string{statusMissing, statusUnexpected, statusReinitialized, statusNonFinite, statusDrift, statusMismatched, statusSkipped, statusChanged, statusUnchanged} {
		if counts[d] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[d], d))
		}
	}
	fmt.Fprintf(&tip, "%s\n%s: %s", quote(collapseNumbers(c.Keys)), plural(len(c.Keys), "tensor"), strings.Join(parts, ", "))
	if n > 0 {
		fmt.Fprintf(&tip, "\nrelative L2: largest %s, mean %s of %d compared", textfmt.Float(worst), textfmt.Float(sum/float64(n)), n)
		fmt.Fprintf(&tip, "\nlargest at %s\n%s", quote(worstKey), statsText(stats[worstKey]))
	}
	c.Tip = tip.String()
}

// statsText is a tensor's statistics on a few lines.
func statsText(t *verify.TensorStats) string {
	if t.Skipped != "" {
		return "not compared: " + quote(t.Skipped)
	}
	s := fmt.Sprintf("relative L2 %s, cosine %s\nmax |Δ| %s at %s (published %s, exported %s)\nmean |Δ| %s; %s of %s elements outside tolerance\n%s → %s",
		statText(t.RelL2), statText(t.Cosine), statText(t.MaxAbsDiff), coords(t.MaxAt), statText(t.PublishedAt), statText(t.ExportedAt),
		statText(t.MeanAbsDiff), textfmt.Thousands(t.Mismatches), textfmt.Thousands(t.Elements), t.Published, t.Exported)
	if t.BitIdentical {
		s += ", bit-identical"
	}
	if t.NonFinite > 0 {
		s += fmt.Sprintf("\n%s NaN or Inf exported where published is finite", textfmt.Thousands(t.NonFinite))
	}
	if t.Bound != nil {
		s += "\ndrift bound: " + t.Bound.String()
	}
	return s
}

// viridis, sampled at 9 even steps: a perceptually even scale that reads
// in grey too. Statuses that are not a change have colours outside it.
var viridis = [][3]float64{{68, 1, 84}, {71, 44, 122}, {59, 81, 139}, {44, 113, 142}, {33, 144, 141},
	{39, 173, 129}, {92, 200, 99}, {170, 220, 50}, {253, 231, 37}}

var statusColor = sync.OnceValue(func() map[string]string {
	return map[string]string{
		statusUnchanged:     "#ffffff",
		statusMissing:       "#111111",
		statusUnexpected:    "#6b6b6b",
		statusMismatched:    "#f08c00",
		statusReinitialized: "#e03131",
		statusNonFinite:     "#c2255c",
		statusSkipped:       "#ced4da",
		statusDrift:         "#a61e4d",
	}
})

// paint sets a cell's colour: a changed cell by its relative L2 on the log
// scale from 10^lo to 10^hi, the others by status.
func (c *heatCell) paint(lo, hi int) {
	c.Glyph = glyphOf(c.Status)
	if c.Status != statusChanged {
		c.Color = statusColor()[c.Status]
		c.Dark = darkStatus(c.Status)
		return
	}
	t := 0.0
	if c.RelL2.Defined() && c.RelL2 > 0 {
		t = (math.Log10(float64(c.RelL2)) - float64(lo)) / float64(hi-lo)
	}
	rgb := scaleColor(t)
	c.Color = fmt.Sprintf("#%02x%02x%02x", rgb[0], rgb[1], rgb[2])
	c.Dark = t < 0.55
}

// darkStatus reports a status whose colour is dark: light text on it.
func darkStatus(s string) bool {
	return s == statusMissing || s == statusUnexpected || s == statusReinitialized || s == statusNonFinite || s == statusDrift
}

// scaleColor is the colour at t in [0, 1] (clamped) of the scale.
func scaleColor(t float64) [3]uint8 {
	t = min(max(t, 0), 1) * float64(len(viridis)-1)
	i := min(int(t), len(viridis)-2)
	f := t - float64(i)
	var out [3]uint8
	for j := range 3 {
		out[j] = uint8(math.Round(viridis[i][j] + f*(viridis[i+1][j]-viridis[i][j])))
	}
	return out
}

// gradient is the legend's CSS gradient over the scale.
func gradient() string {
	stops := make([]string, len(viridis))
	for i, c := range viridis {
		stops[i] = fmt.Sprintf("rgb(%d,%d,%d) %d%%", int(c[0]), int(c[1]), int(c[2]), i*100/(len(viridis)-1))
	}
	return "linear-gradient(to right, " + strings.Join(stops, ", ") + ")"
}

// collapseNumbers writes the keys of one cell (the experts of a layer) as
// one: model.layers.3.mlp.experts.{0..127}.up_proj.weight. Keys that differ
// in more than their numbers give the first key and "…".
func collapseNumbers(keys []string) string {
	template, _ := keyTemplate(keys[0])
	var nums [][]int
	for _, k := range keys {
		t, n := keyTemplate(k)
		if t != template {
			return keys[0] + " …"
		}
		if nums == nil {
			nums = make([][]int, len(n))
		}
		for i := range n {
			nums[i] = append(nums[i], n[i])
		}
	}
	for _, n := range nums {
		template = strings.Replace(template, "{}", indexSet(n), 1)
	}
	return template
}
