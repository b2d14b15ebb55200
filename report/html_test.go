package report

import (
	"crypto/sha256"
	"encoding/base64"
	"html"
	"math"
	"regexp"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/verify"
)

func TestHTMLSelfContained(t *testing.T) {
	for _, rep := range goldenReports {
		out := render(t, "html", rep.report(), goldenOptions)
		// Nothing is loaded: no sources, links, imports or URLs in styles.
		for _, re := range []string{`(?i)\ssrc\s*=`, `(?i)\shref\s*=`, `(?i)@import`, `(?i)url\(`, `(?i)<link`, `(?i)<iframe`, `(?i)<img`} {
			if m := regexp.MustCompile(re).FindString(out); m != "" {
				t.Errorf("%s: the page loads something: %q", rep.name, m)
			}
		}
		if rep.name != "hostile" && (strings.Contains(out, "http:") || strings.Contains(out, "https:")) {
			t.Errorf("%s: the page names a URL", rep.name)
		}
		// The policy allows the page's own script and nothing else.
		csp := regexp.MustCompile(`<meta http-equiv="Content-Security-Policy" content="([^"]*)">`).FindStringSubmatch(out)
		if csp == nil {
			t.Fatalf("%s: no Content-Security-Policy", rep.name)
		}
		policy := html.UnescapeString(csp[1])
		m := regexp.MustCompile(`script-src 'sha256-([A-Za-z0-9+/=]+)'`).FindStringSubmatch(policy)
		if m == nil || !strings.HasPrefix(policy, "default-src 'none';") {
			t.Fatalf("%s: no Content-Security-Policy", rep.name)
		}
		scripts := regexp.MustCompile(`(?s)<script>(.*?)</script>`).FindAllStringSubmatch(out, -1)
		if len(scripts) != 1 {
			t.Fatalf("%s: %d inline scripts, want 1", rep.name, len(scripts))
		}
		sum := sha256.Sum256([]byte(scripts[0][1]))
		if base64.StdEncoding.EncodeToString(sum[:]) != m[1] {
			t.Errorf("%s: the policy's hash is not the script's", rep.name)
		}
	}
}

func TestHTMLHostileNamesEscaped(t *testing.T) {
	r := hostileReport()
	r.Values = &verify.ValueReport{Compared: 1, Tensors: []verify.TensorStats{{Key: hostileNames[7], RelL2: 0.5}}}
	out := render(t, "html", r, goldenOptions)
	for _, bad := range []string{"<script>alert", "</script><script>", "<b>bold", "<failure>", "\x1b", "\x00"} {
		if strings.Contains(out, bad) {
			t.Errorf("the page holds %q unescaped", bad)
		}
	}
	if n := strings.Count(out, "<script"); n != 2 { // the data and the page's script
		t.Errorf("%d script elements, want 2", n)
	}
}

func TestHeatmapLayout(t *testing.T) {
	hm := buildHeatmap(diffReport())
	if got := strings.Join(hm.Columns, " "); got != "q_proj k_proj v_proj o_proj k_norm gate experts.gate_proj experts.up_proj experts.down_proj" {
		t.Errorf("columns %s", got)
	}
	var labels []string
	for _, r := range hm.Rows {
		labels = append(labels, r.Label)
	}
	if got := strings.Join(labels, " "); got != "embedding 0 1 2 3 head" {
		t.Fatalf("rows %s", got)
	}
	col := func(name string) int {
		for i, c := range hm.Columns {
			if c == name {
				return i
			}
		}
		t.Fatalf("no column %s", name)
		return -1
	}
	layer := func(n int) *heatRow { return hm.Rows[1+n] }
	if c := layer(2).Cells[col("k_norm")]; c.Status != statusMissing || c.Color != statusColor()[statusMissing] {
		t.Errorf("layer 2 k_norm %+v, want missing", c)
	}
	if c := layer(1).Cells[col("experts.down_proj")]; c.Status != statusReinitialized || len(c.Keys) != 2 || float64(c.RelL2) != 1.41 {
		t.Errorf("layer 1 experts.down_proj %+v, want 2 experts aggregated, re-initialized, largest 1.41", c)
	}
	if c := layer(0).Cells[col("experts.gate_proj")]; c.Status != statusChanged || float64(c.RelL2) != 2e-4 || math.Abs(float64(c.MeanRelL2)-1.5e-4) > 1e-12 ||
		!strings.HasPrefix(c.Tip, "model.layers.0.mlp.experts.{0..1}.gate_proj.weight\n2 tensors: 2 changed\n") {
		t.Errorf("layer 0 experts.gate_proj %+v", c)
	}
	if c := layer(0).Cells[col("k_norm")]; c.Status != statusUnchanged {
		t.Errorf("layer 0 k_norm %+v, want unchanged", c)
	}
	head := map[string]string{}
	for _, c := range hm.Rows[5].Cells {
		head[c.Label] = c.Status
	}
	if head["norm"] != statusNonFinite || head["lm_head"] != statusMismatched {
		t.Errorf("head row %v", head)
	}
	if hm.Rows[0].Cells[0].Label != "embed_tokens" || hm.Rows[0].Cells[0].Status != statusUnchanged {
		t.Errorf("embedding row %+v", hm.Rows[0].Cells[0])
	}
	// Changes span 1e-6 .. 1e-2 (the re-initialized cell has a colour of
	// its own and stays off the scale); the smallest change is the
	// scale's first colour, the largest its last.
	if hm.LogMin != -6 || hm.LogMax != -2 {
		t.Errorf("scale 1e%d..1e%d, want 1e-6..1e-2", hm.LogMin, hm.LogMax)
	}
	lo, hi := scaleColor(0), scaleColor(1)
	if c := layer(0).Cells[col("q_proj")]; c.Color != hexColor(lo) {
		t.Errorf("1e-6 is %s, want %s", c.Color, hexColor(lo))
	}
	if c := layer(3).Cells[col("k_proj")]; float64(c.RelL2) != 1e-2 || c.Color != hexColor(hi) {
		t.Errorf("1e-2 is %s (%v), want %s", c.Color, c.RelL2, hexColor(hi))
	}
	// The page has a cell per tensor kind present in each layer.
	out := render(t, "html", diffReport(), goldenOptions)
	if n := strings.Count(out, "data-status="); n != 4*9+1+2 { // 4 layers of 9 kinds, the embedding, the norm and the head
		t.Errorf("%d cells", n)
	}
}

func hexColor(c [3]uint8) string {
	const digits = "0123456789abcdef"
	b := []byte{'#'}
	for _, v := range c {
		b = append(b, digits[v>>4], digits[v&15])
	}
	return string(b)
}

func TestKindOf(t *testing.T) {
	for _, tt := range []struct{ rest, want string }{
		{"self_attn.q_proj.weight", "q_proj"},
		{"self_attn.q_proj.bias", "q_proj.bias"},
		{"mlp.experts.17.down_proj.weight", "experts.down_proj"},
		{"mlp.gate.weight", "gate"},
		{"mlp.shared_expert.up_proj.weight", "shared_expert.up_proj"},
		{"input_layernorm.weight", "input_layernorm"},
		{"block_sparse_moe.experts.3.w1.weight", "experts.w1"},
	} {
		if got := kindOf(tt.rest); got != tt.want {
			t.Errorf("kindOf(%q) = %q, want %q", tt.rest, got, tt.want)
		}
	}
}

func TestScaleColor(t *testing.T) {
	if scaleColor(-1) != scaleColor(0) || scaleColor(2) != scaleColor(1) {
		t.Error("the scale must clamp")
	}
	if got := scaleColor(0.5); got != [3]uint8{33, 144, 141} {
		t.Errorf("mid-scale %v", got)
	}
}
