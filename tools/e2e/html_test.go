package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// chromium finds Debian's chromium (.ci/run installs it).
func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no chromium: apt-get install chromium (make e2e needs a browser)")
	return ""
}

// report is the part of ckptcheck's JSON report the test reads.
type report struct {
	OK      bool `json:"ok"`
	Summary struct {
		Error, Warning, Info int
	} `json:"summary"`
	Values struct {
		Tensors []struct {
			Key   string   `json:"key"`
			RelL2 *float64 `json:"rel_l2"`
		} `json:"tensors"`
	} `json:"values"`
}

// domCell is a heatmap cell as the browser lays it out.
type domCell struct {
	Row, Status, Rel, Keys, Tip, Text, Background string
	Title                                         bool
	X, Y, W, H                                    float64
}

func TestHTMLReportInChromium(t *testing.T) {
	needE2E(t)
	browserPath := chromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	dir := t.TempDir()
	pub, exp := writeScenario(t, dir)
	out := artifacts(t)
	pagePath := filepath.Join(out, "report.html")
	code, js, stderr := run(t, "diff", pub, exp, "--values", "--rtol", "1e-3", "--html", pagePath, "--format", "json")
	if code != 1 {
		t.Fatalf("diff: exit %d, want 1 (findings): %s", code, stderr)
	}
	var rep report
	if err := json.Unmarshal([]byte(js), &rep); err != nil {
		t.Fatal(err)
	}
	relOf := map[string]float64{}
	for _, tn := range rep.Values.Tensors {
		if tn.RelL2 != nil {
			relOf[tn.Key] = *tn.RelL2
		}
	}

	b, err := startBrowser(ctx, browserPath, filepath.Join(dir, "profile"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.close()
	p, err := b.newPage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, domain := range []string{"Page.enable", "Network.enable", "Runtime.enable", "Log.enable"} {
		if err := p.call(ctx, domain, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.call(ctx, "Emulation.setDeviceMetricsOverride", map[string]any{"width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": false}, nil); err != nil {
		t.Fatal(err)
	}
	pageURL := (&url.URL{Scheme: "file", Path: pagePath}).String()
	if err := p.call(ctx, "Page.navigate", map[string]any{"url": pageURL}, nil); err != nil {
		t.Fatal(err)
	}
	// The page's script marks the root element when it has run.
	var ready string
	for deadline := time.Now().Add(30 * time.Second); ready == ""; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the page's script never ran (blocked by its own Content-Security-Policy?)")
		}
		p.eval(ctx, `document.readyState === "complete" ? (document.documentElement.getAttribute("data-ready") || "") : ""`, &ready)
	}

	var dom struct {
		Verdict string
		Columns []string
		Cells   []domCell
		Data    struct {
			OK      bool `json:"ok"`
			Heatmap struct {
				Columns []string `json:"columns"`
				Rows    []struct {
					Label string `json:"label"`
					Cells []*struct {
						Keys   []string `json:"keys"`
						Status string   `json:"status"`
						RelL2  *float64 `json:"rel_l2"`
					} `json:"cells"`
				} `json:"rows"`
			} `json:"heatmap"`
		}
		Legend []string
	}
	err = p.eval(ctx, `(() => {
		const cells = [...document.querySelectorAll("#heatmap td[data-status]")].map(td => {
			const r = td.getBoundingClientRect();
			return {Row: td.parentElement.dataset.row, Status: td.dataset.status, Rel: td.dataset.rel || "",
				Keys: td.dataset.keys, Tip: td.dataset.tip, Text: td.textContent, Title: td.hasAttribute("title"),
				Background: getComputedStyle(td).backgroundColor, X: r.x, Y: r.y, W: r.width, H: r.height};
		});
		return {Verdict: document.getElementById("verdict").textContent,
			Columns: [...document.querySelectorAll("#heatmap thead th")].slice(1).map(th => th.textContent),
			Cells: cells,
			Data: JSON.parse(document.getElementById("ckptcheck-data").textContent),
			Legend: [...document.querySelectorAll("#legend .ticks span")].map(s => s.textContent)};
	})()`, &dom)
	if err != nil {
		t.Fatal(err)
	}

	// The page's data is the report's.
	if dom.Data.OK != rep.OK || !strings.HasPrefix(dom.Verdict, "FAIL: ") {
		t.Errorf("verdict %q, data ok %v; the report says ok %v", dom.Verdict, dom.Data.OK, rep.OK)
	}
	wantCols := "q_proj k_proj v_proj o_proj q_norm k_norm gate experts.gate_proj experts.up_proj experts.down_proj input_layernorm post_attention_layernorm"
	if got := strings.Join(dom.Columns, " "); got != wantCols || strings.Join(dom.Data.Heatmap.Columns, " ") != wantCols {
		t.Errorf("columns %q, want %q", got, wantCols)
	}
	// A cell per tensor kind and layer (4 × 12), the embedding and the
	// final norm (the head is tied): 50, every one the script made
	// hoverable.
	if len(dom.Cells) != 50 || ready != "50" {
		t.Fatalf("%d cells (the script saw %s), want 50", len(dom.Cells), ready)
	}
	i := 0
	for _, row := range dom.Data.Heatmap.Rows {
		for _, c := range row.Cells {
			if c == nil {
				continue
			}
			d := dom.Cells[i]
			i++
			if d.Status != c.Status || d.Keys != strconv.Itoa(len(c.Keys)) {
				t.Errorf("cell %d (row %s): page %s/%s keys, data %s/%d keys", i, row.Label, d.Status, d.Keys, c.Status, len(c.Keys))
			}
			// Its number is the largest relative L2 of its tensors, as
			// the JSON report gives them.
			want, have := math.Inf(-1), false
			for _, k := range c.Keys {
				if v, ok := relOf[k]; ok {
					want, have = math.Max(want, v), true
				}
			}
			if have {
				got, err := strconv.ParseFloat(d.Rel, 64)
				if err != nil || math.Abs(got-want) > 1e-5*math.Max(want, 1e-12) {
					t.Errorf("cell %d (%s): data-rel %q, want %g", i, c.Keys[0], d.Rel, want)
				}
			}
			if d.Title {
				t.Errorf("cell %d keeps its title: the script did not take over the hover", i)
			}
			if d.W < 10 || d.H < 10 {
				t.Errorf("cell %d is %gx%g px: not laid out", i, d.W, d.H)
			}
		}
	}
	// The damage is where it was done, in its own colours.
	byStatus := map[string][]domCell{}
	for _, d := range dom.Cells {
		byStatus[d.Status] = append(byStatus[d.Status], d)
	}
	for status, row := range map[string]string{"missing": "3", "reinitialized": "1", "nonfinite": "head"} {
		if cs := byStatus[status]; len(cs) != 1 || cs[0].Row != row {
			t.Errorf("%s cells %+v, want one in row %s", status, cs, row)
		}
	}
	if cs := byStatus["reinitialized"]; len(cs) == 1 && (cs[0].Keys != "4" || !strings.Contains(cs[0].Tip, "4 tensors: 1 reinitialized, 3 changed\n")) {
		t.Errorf("the experts of layer 1 are not aggregated: %+v", cs[0])
	}
	colours := map[string]string{}
	for _, s := range []string{"missing", "reinitialized", "nonfinite", "unchanged"} {
		if cs := byStatus[s]; len(cs) > 0 {
			colours[s] = cs[0].Background
		}
	}
	if colours["missing"] == colours["reinitialized"] || colours["reinitialized"] == colours["nonfinite"] || colours["missing"] == colours["unchanged"] {
		t.Errorf("statuses share colours: %v", colours)
	}
	// The drift grows by a decade a layer: a later layer's q_proj cell is
	// brighter on the scale (viridis grows in green) than an earlier one's.
	green := func(row string) float64 {
		for _, d := range dom.Cells {
			if d.Row == row && strings.HasPrefix(d.Tip, "model.layers."+row+".self_attn.k_proj.weight") {
				var r, g, b float64
				if _, err := fmtSscanf(d.Background, &r, &g, &b); err != nil {
					t.Fatalf("background %q: %v", d.Background, err)
				}
				return g
			}
		}
		t.Fatalf("no k_proj cell in row %s", row)
		return 0
	}
	if !(green("0") < green("1") && green("1") < green("2") && green("2") < green("3")) {
		t.Errorf("the colour scale does not follow the drift: %v %v %v %v", green("0"), green("1"), green("2"), green("3"))
	}
	if len(dom.Legend) < 3 || !strings.HasPrefix(dom.Legend[0], "1e-") {
		t.Errorf("legend ticks %q", dom.Legend)
	}

	// Hovering a cell shows its numbers.
	var rect struct{ X, Y, W, H float64 }
	if err := p.eval(ctx, `(() => {
		const td = document.querySelector('#heatmap td[data-status="reinitialized"]');
		td.scrollIntoView({block: "center"});
		const r = td.getBoundingClientRect();
		return {X: r.x, Y: r.y, W: r.width, H: r.height};
	})()`, &rect); err != nil {
		t.Fatal(err)
	}
	if err := p.call(ctx, "Input.dispatchMouseEvent", map[string]any{"type": "mouseMoved", "x": rect.X + rect.W/2, "y": rect.Y + rect.H/2}, nil); err != nil {
		t.Fatal(err)
	}
	var tip struct {
		Hidden bool
		Text   string
	}
	p.eval(ctx, `({Hidden: document.getElementById("tip").hidden, Text: document.getElementById("tip").textContent})`, &tip)
	if tip.Hidden || !strings.Contains(tip.Text, "reinitialized") || !strings.Contains(tip.Text, "relative L2") || !strings.Contains(tip.Text, "cosine") {
		t.Errorf("hovering the re-initialized cell shows %+v", tip)
	}

	// A screenshot of the whole page, kept as an artefact.
	var height float64
	p.eval(ctx, `document.documentElement.scrollHeight`, &height)
	p.call(ctx, "Emulation.setDeviceMetricsOverride", map[string]any{"width": 1280, "height": int(math.Min(height, 6000)), "deviceScaleFactor": 1, "mobile": false}, nil)
	var shot struct {
		Data string `json:"data"`
	}
	if err := p.call(ctx, "Page.captureScreenshot", map[string]any{"format": "png"}, &shot); err != nil {
		t.Fatal(err)
	}
	png, _ := base64.StdEncoding.DecodeString(shot.Data)
	if len(png) < 1000 || string(png[1:4]) != "PNG" {
		t.Fatalf("screenshot of %d bytes", len(png))
	}
	shotPath := filepath.Join(out, "report.png")
	if err := os.WriteFile(shotPath, png, 0o644); err != nil {
		t.Fatal(err)
	}

	// Printed: the tooltip is hidden, the details open, colours kept.
	if err := p.eval(ctx, `window.dispatchEvent(new Event("beforeprint"))`, nil); err != nil {
		t.Fatal(err)
	}
	if err := p.call(ctx, "Emulation.setEmulatedMedia", map[string]any{"media": "print"}, nil); err != nil {
		t.Fatal(err)
	}
	var printed struct {
		Tip, Adjust string
		Open        bool
	}
	p.eval(ctx, `({Tip: getComputedStyle(document.getElementById("tip")).display,
		Adjust: getComputedStyle(document.querySelector("#heatmap td[data-status]")).printColorAdjust || "",
		Open: document.getElementById("all-details").open})`, &printed)
	if printed.Tip != "none" || printed.Adjust != "exact" || !printed.Open {
		t.Errorf("printing: %+v, want the tooltip hidden, colours exact, details open", printed)
	}
	var pdf struct {
		Data string `json:"data"`
	}
	if err := p.call(ctx, "Page.printToPDF", map[string]any{"printBackground": true, "preferCSSPageSize": true}, &pdf); err != nil {
		t.Fatal(err)
	}
	doc, _ := base64.StdEncoding.DecodeString(pdf.Data)
	if !strings.HasPrefix(string(doc), "%PDF") {
		t.Fatal("printToPDF did not make a PDF")
	}
	os.WriteFile(filepath.Join(out, "report.pdf"), doc, 0o644)

	// The page asked for nothing but itself, and broke no rule of its own.
	for drained := false; !drained; {
		select {
		case ev := <-b.events:
			switch ev.Method {
			case "Network.requestWillBeSent":
				var req struct {
					Request struct {
						URL string `json:"url"`
					} `json:"request"`
				}
				json.Unmarshal(ev.Params, &req)
				if u := req.Request.URL; u != pageURL && !strings.HasPrefix(u, "data:") && u != "about:blank" {
					t.Errorf("the page requested %s", u)
				}
			case "Runtime.exceptionThrown":
				t.Errorf("the page's script threw: %s", ev.Params)
			case "Log.entryAdded":
				if strings.Contains(string(ev.Params), "Content Security Policy") || strings.Contains(string(ev.Params), `"level":"error"`) {
					t.Errorf("the console says: %s", ev.Params)
				}
			}
		default:
			drained = true
		}
	}
	t.Logf("artefacts: %s, %s, %s", pagePath, shotPath, filepath.Join(out, "report.pdf"))
}

// fmtSscanf reads a computed colour, "rgb(r, g, b)".
func fmtSscanf(s string, r, g, b *float64) (int, error) {
	return fmt.Sscanf(s, "rgb(%g, %g, %g)", r, g, b)
}
