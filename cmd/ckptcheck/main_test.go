package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/safetensors"
	"github.com/ckptcheck/ckptcheck/verify"
)

func ckptcheck(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), append([]string{"ckptcheck"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

// The committed example (testdata/, written by fixture.WriteExample): the
// tiny Qwen3 in BF16 as published, and an F32 export of it that lost
// model.layers.2.self_attn.k_norm.weight. Counts in expected output come
// from here.
var (
	tinySpecs   = fixture.Tiny.Specs()
	tinyTensors = len(tinySpecs)  // published
	exportedN   = tinyTensors - 1 // exported, each a dtype warning
	mlpTensors  = count(tinySpecs, func(s fixture.Spec) bool { return strings.Contains(s.Name, ".mlp.") })
	kNorms      = count(tinySpecs, func(s fixture.Spec) bool { return strings.HasSuffix(s.Name, ".k_norm.weight") })
)

func count[T any](xs []T, f func(T) bool) int {
	n := 0
	for _, x := range xs {
		if f(x) {
			n++
		}
	}
	return n
}

func tinyCheckpoint(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "published")
	if err := fixture.WritePublished(dir, fixture.Tiny); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestExitCodes(t *testing.T) {
	good := tinyCheckpoint(t)
	bad := filepath.Join(t.TempDir(), "bad.safetensors")
	os.WriteFile(bad, []byte("short"), 0o644)
	warn := tinyCheckpoint(t)
	fixture.WriteFile(filepath.Join(warn, "extra.safetensors"), nil, nil)

	tests := []struct {
		args []string
		code int
	}{
		{[]string{"validate", good}, 0},
		{[]string{"validate", bad}, 1},
		{[]string{"validate", good, bad}, 1},
		{[]string{"validate", warn}, 0},
		{[]string{"validate", warn, "--fail-on", "warning"}, 1},
		{[]string{"validate", "--fail-on", "warning", warn}, 1},
		{[]string{"validate", bad, "--fail-on", "never"}, 0},
		{[]string{"validate", filepath.Join(good, "nope")}, 2},
		{[]string{"validate"}, 2},
		{[]string{"validate", good, "--fail-on", "sometimes"}, 2},
		{[]string{"validate", good, "--format", "xml"}, 2},
		{[]string{"validate", good, "--no-such-flag"}, 2},
		{[]string{"frobnicate"}, 2},
		{[]string{"inspect", good}, 0},
		{[]string{"inspect", bad}, 1},
		{[]string{"inspect", good, good}, 2},
		{[]string{"inspect", good, "--depth", "-1", "--tree"}, 2},
		{[]string{"inspect", good, "--depth", "2"}, 2},
		{[]string{"codes"}, 0},
	}
	for _, tt := range tests {
		code, _, stderr := ckptcheck(t, tt.args...)
		if code != tt.code {
			t.Errorf("%v: exit %d, want %d (stderr %q)", tt.args, code, tt.code, stderr)
		}
		if code == 2 && (stderr == "" || strings.Count(strings.TrimSpace(stderr), "\n") > 0 && !strings.Contains(stderr, "Usage")) {
			t.Errorf("%v: exit 2 wants a one-line error, got %q", tt.args, stderr)
		}
	}
}

func TestValidateJSON(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.safetensors")
	os.WriteFile(bad, []byte("\x08\x00\x00\x00\x00\x00\x00\x00{}      x"), 0o644)
	code, out, _ := ckptcheck(t, "validate", "--format", "json", bad)
	var rep struct {
		Schema   string         `json:"schema"`
		Command  string         `json:"command"`
		OK       bool           `json:"ok"`
		Summary  map[string]int `json:"summary"`
		Inputs   []struct{ Path string }
		Findings []struct{ Code, Severity, File, Message string }
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if code != 1 || rep.Schema != "ckptcheck.report/v1" || rep.Command != "validate" || rep.OK ||
		rep.Summary["error"] != 1 || len(rep.Findings) != 1 || rep.Findings[0].Code != "metadata_incomplete_buffer" ||
		rep.Findings[0].Severity != "error" || rep.Findings[0].File != bad || len(rep.Inputs) != 1 || rep.Inputs[0].Path != bad {
		t.Errorf("exit %d, report %+v", code, rep)
	}
}

func TestInspect(t *testing.T) {
	dir := tinyCheckpoint(t)
	_, out, _ := ckptcheck(t, "inspect", dir)
	for _, want := range []string{"model.layers.3.mlp.down_proj.weight", "BF16", "[32, 64]", fmt.Sprintf("%d tensors", tinyTensors), "in 3 files", "format = pt", "NAME  ", "PARAMETERS"} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect output lacks %q:\n%s", want, out)
		}
	}
	// Natural order: layer 2 before layer 10 would matter; here 0..3 in order.
	if strings.Index(out, "model.layers.0.") > strings.Index(out, "model.layers.1.") {
		t.Error("tensors not in natural order")
	}
	_, out, _ = ckptcheck(t, "inspect", dir, "--tree", "--depth", "2")
	if !strings.Contains(out, "layers.{0..3}") || strings.Contains(out, "q_proj") {
		t.Errorf("tree output:\n%s", out)
	}
	_, out, _ = ckptcheck(t, "inspect", dir, "--filter", "*.k_norm.weight", "--format", "json", "--tree")
	var ins struct {
		Schema  string
		Tensors []struct {
			Name       string
			DType      string
			Parameters uint64
		}
		Totals struct {
			Tensors    int
			Parameters uint64
			ByDType    map[string]struct{ Tensors int } `json:"by_dtype"`
		}
		Tree *struct{ Parameters uint64 }
	}
	if err := json.Unmarshal([]byte(out), &ins); err != nil {
		t.Fatal(err)
	}
	// Each k_norm holds head_dim parameters.
	params := uint64(kNorms * fixture.Tiny.HeadDim)
	if ins.Schema != "ckptcheck.report/v1" || len(ins.Tensors) != kNorms || ins.Totals.Parameters != params ||
		ins.Totals.ByDType["BF16"].Tensors != kNorms || ins.Tree == nil || ins.Tree.Parameters != params {
		t.Errorf("want %d tensors of %d parameters: %+v", kNorms, params, ins)
	}
	for _, x := range ins.Tensors {
		if !strings.HasSuffix(x.Name, ".k_norm.weight") || x.DType != "BF16" || x.Parameters != uint64(fixture.Tiny.HeadDim) {
			t.Errorf("filtered tensor %+v", x)
		}
	}
}

func TestControlCharactersEscaped(t *testing.T) {
	p := filepath.Join(t.TempDir(), "evil.safetensors")
	fixture.WriteFile(p, []fixture.Tensor{{Name: "a\x1b[2Jb", DType: safetensors.U8, Shape: []uint64{1}, Data: []byte{0}}}, nil)
	_, out, _ := ckptcheck(t, "inspect", p)
	if strings.Contains(out, "\x1b") || !strings.Contains(out, `a\x1b[2Jb`) {
		t.Errorf("escape sequence reached the output: %q", out)
	}
}

func TestCodesListed(t *testing.T) {
	code, out, _ := ckptcheck(t, "codes")
	if code != 0 {
		t.Errorf("exit %d", code)
	}
	for _, c := range verify.Codes() {
		if !strings.Contains(out, string(c.Code)) {
			t.Errorf("codes output lacks %s", c.Code)
		}
	}
}

var writeExample = fixture.WriteExample

func TestDiffCommand(t *testing.T) {
	pub, exp := "../../testdata/published", "../../testdata/exported"
	code, out, _ := ckptcheck(t, "diff", pub, exp)
	if code != 1 || !strings.HasPrefix(out, fmt.Sprintf("FAIL: 1 error, %d warnings, 1 info\n", exportedN)) ||
		!strings.Contains(out, "model.layers.2.self_attn.k_norm.weight: in published, missing from exported") ||
		!strings.Contains(out, fmt.Sprintf("%d tensors BF16 → F32", exportedN)) {
		t.Errorf("exit %d:\n%s", code, out)
	}
	tests := []struct {
		args []string
		code int
	}{
		{[]string{"diff", pub, pub}, 0},
		{[]string{"diff", pub, exp, "--fail-on", "never"}, 0},
		{[]string{"diff", "--fail-on", "never", pub, exp}, 0},
		{[]string{"diff", pub, exp, "--dtype", "f32", "--fail-on", "warning"}, 1},
		{[]string{"diff", pub, pub, "--fail-on", "warning"}, 0},
		{[]string{"diff", pub}, 2},
		{[]string{"diff", pub, exp, exp}, 2},
		{[]string{"diff", pub, exp, "--adapter", "exported=nope"}, 2},
		{[]string{"diff", pub, exp, "--adapter", "sideways=hf"}, 2},
		{[]string{"diff", pub, exp, "--rename", "(=x"}, 2},
		{[]string{"diff", pub, exp, "--tied", "maybe"}, 2},
		{[]string{"diff", pub, exp, "--dtype", "f13"}, 2},
		{[]string{"diff", pub, "missing-dir"}, 2},
	}
	for _, tt := range tests {
		if code, _, stderr := ckptcheck(t, tt.args...); code != tt.code {
			t.Errorf("%v: exit %d, want %d (%s)", tt.args, code, tt.code, stderr)
		}
	}
	// Forcing an adapter: the JSON says which.
	_, out, _ = ckptcheck(t, "diff", pub, exp, "--format", "json", "--adapter", "published=hf", "--adapter", "torchtitan-hf")
	var rep struct {
		Inputs []struct {
			Side, Adapter string
			Tensors       int
		}
		Findings []struct{ Code, Key, Side string }
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Inputs) != 2 || rep.Inputs[0].Side != "published" || rep.Inputs[0].Adapter != "hf" || rep.Inputs[0].Tensors != tinyTensors ||
		rep.Inputs[1].Side != "exported" || rep.Inputs[1].Adapter != "torchtitan-hf" || rep.Inputs[1].Tensors != exportedN {
		t.Fatalf("inputs %+v", rep.Inputs)
	}
	codes := map[string]int{}
	for _, f := range rep.Findings {
		codes[f.Code]++
	}
	// torchtitan-hf strips only a doubled "model." (and maps the MoE names
	// of torchtitan's transformers backend): HF names pass through it, so
	// the findings are the plain diff's.
	_, out, _ = ckptcheck(t, "diff", pub, exp, "--format", "json")
	var plain struct{ Findings []struct{ Code string } }
	if err := json.Unmarshal([]byte(out), &plain); err != nil {
		t.Fatal(err)
	}
	want := map[string]int{}
	for _, f := range plain.Findings {
		want[f.Code]++
	}
	if !maps.Equal(codes, want) || codes["missing_key"] != 1 {
		t.Errorf("findings %v, want the plain diff's %v", codes, want)
	}
}

func TestDiffValuesCommand(t *testing.T) {
	pub, exp := "../../testdata/published", "../../testdata/exported"
	code, out, _ := ckptcheck(t, "diff", pub, exp, "--values")
	if code != 1 || !strings.Contains(out, fmt.Sprintf("values: %d compared: %d equal values\n", exportedN, exportedN)) {
		t.Errorf("exit %d:\n%s", code, out)
	}
	// A perturbed export: fails exactly, passes with --rtol.
	dir := t.TempDir()
	var ts []fixture.Tensor
	for _, x := range fixture.Tiny.Tensors(safetensors.BF16) {
		ts = append(ts, fixture.Perturb(x, safetensors.F32, 1e-3, 2))
	}
	if err := fixture.WriteFile(filepath.Join(dir, "model.safetensors"), ts, nil); err != nil {
		t.Fatal(err)
	}
	code, out, _ = ckptcheck(t, "diff", pub, dir, "--values")
	if code != 1 || !strings.Contains(out, fmt.Sprintf("value_mismatch (%d)", tinyTensors)) || !strings.Contains(out, "largest changes") {
		t.Errorf("exact: exit %d:\n%s", code, out)
	}
	code, out, _ = ckptcheck(t, "diff", pub, dir, "--values", "--rtol", "1e-2", "--fail-on", "warning")
	if code != 1 || strings.Contains(out, "value_mismatch") || !strings.Contains(out, fmt.Sprintf("%d within tolerance", tinyTensors)) {
		t.Errorf("rtol: exit %d:\n%s", code, out) // exit 1 for the dtype warnings
	}
	policy := filepath.Join(t.TempDir(), "policy.json")
	if err := os.WriteFile(policy, []byte(`{"rules":[{"match":"*.mlp.*","rtol":1e-2},{"match":"*","skip":"checked elsewhere"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, out, _ = ckptcheck(t, "diff", pub, dir, "--values", "--policy", policy, "--format", "json")
	var rep struct {
		Values struct {
			Compared        int
			Skipped         int
			WithinTolerance int `json:"within_tolerance"`
			Tensors         []struct {
				Key    string
				RelL2  *float64 `json:"rel_l2"`
				Cosine *float64
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	// The MLP tensors are compared (within 1e-2), the rest skipped.
	if rep.Values.WithinTolerance != mlpTensors || rep.Values.Compared != mlpTensors || rep.Values.Skipped != tinyTensors-mlpTensors ||
		len(rep.Values.Tensors) != tinyTensors {
		t.Errorf("want %d of %d tensors compared: %+v", mlpTensors, tinyTensors, rep.Values)
	}
	// Statistics of a skipped tensor are undefined: null, never 0.
	for _, x := range rep.Values.Tensors {
		if compared := strings.Contains(x.Key, ".mlp."); compared != (x.RelL2 != nil) || compared != (x.Cosine != nil) {
			t.Errorf("%s: rel_l2 %v, cosine %v", x.Key, x.RelL2, x.Cosine)
		}
	}
	for _, tt := range []struct {
		args []string
		code int
	}{
		{[]string{"diff", pub, exp, "--rtol", "1e-2"}, 2},
		{[]string{"diff", pub, exp, "--values", "--atol", "-1"}, 2},
		{[]string{"diff", pub, exp, "--values", "--policy", "/nonexistent.json"}, 2},
		{[]string{"diff", pub, exp, "--values", "--rtol", "x"}, 2},
	} {
		if code, _, stderr := ckptcheck(t, tt.args...); code != tt.code {
			t.Errorf("%v: exit %d, want %d (%s)", tt.args, code, tt.code, stderr)
		}
	}
}

func TestAdaptersAndExplain(t *testing.T) {
	code, out, _ := ckptcheck(t, "adapters")
	if code != 0 || !strings.Contains(out, "torchtitan-qwen3") || !strings.Contains(out, "megatron") {
		t.Errorf("adapters: %d\n%s", code, out)
	}
	code, out, _ = ckptcheck(t, "adapters", "torchtitan-llama3")
	if code != 0 || !strings.Contains(out, "permute layers.{i}.attention.wq.weight") {
		t.Errorf("adapters NAME: %d\n%s", code, out)
	}
	if code, _, _ := ckptcheck(t, "adapters", "nope"); code != 2 {
		t.Errorf("unknown adapter: exit %d", code)
	}
	pub, exp := "../../testdata/published", "../../testdata/exported"
	code, out, _ = ckptcheck(t, "diff", pub, exp, "--explain", "model.layers.2.self_attn.k_norm.weight")
	if code != 0 || !strings.Contains(out, "exported (adapter hf): no tensor of that name") || !strings.Contains(out, "published (adapter hf): BF16 [8]") {
		t.Errorf("explain: %d\n%s", code, out)
	}

	// A user adapter file, by name and in auto.
	dir := t.TempDir()
	var ts []fixture.Tensor
	for _, x := range fixture.Tiny.Tensors(safetensors.BF16) {
		x.Name = strings.Replace(x.Name, "model.", "student.", 1)
		ts = append(ts, x)
	}
	fixture.WriteFile(filepath.Join(dir, "model.safetensors"), ts, nil)
	rules := filepath.Join(t.TempDir(), "student.adapter")
	os.WriteFile(rules, []byte("name student\ndoc distilled copies\nrename student.{a} model.{a}\nregex ^student\\.(.*)$ model.$1\n"), 0o644)
	for _, args := range [][]string{
		{"diff", pub, dir, "--adapter-file", rules},
		{"diff", pub, dir, "--adapter-file", rules, "--adapter", "exported=student"},
	} {
		code, out, _ := ckptcheck(t, append(args, "--format", "json")...)
		if code != 0 || !strings.Contains(out, `"adapter": "student"`) {
			t.Errorf("%v: exit %d\n%s", args, code, out)
		}
	}
	// covers lines, in text and JSON.
	code, out, _ = ckptcheck(t, "adapters", "--format", "json")
	if code != 0 || !strings.Contains(out, `"covers": [`) || !strings.Contains(out, "torchtitan v0.2.0, v0.2.1, v0.2.2") {
		t.Errorf("adapters --format json: %d\n%s", code, out)
	}
	// A transposed layout: --explain shows the stored shape, --values reads
	// it transposed.
	tdir := t.TempDir()
	var tts []fixture.Tensor
	for _, x := range fixture.Tiny.Tensors(safetensors.BF16) {
		if x.Name == "model.layers.0.mlp.down_proj.weight" {
			rows, cols := int(x.Shape[0]), int(x.Shape[1])
			data := make([]byte, len(x.Data))
			for r := range rows {
				for c := range cols {
					copy(data[2*(c*rows+r):], x.Data[2*(r*cols+c):2*(r*cols+c)+2])
				}
			}
			x.Name, x.Shape, x.Data = "down_t", []uint64{uint64(cols), uint64(rows)}, data
		}
		tts = append(tts, x)
	}
	fixture.WriteFile(filepath.Join(tdir, "model.safetensors"), tts, nil)
	trules := filepath.Join(t.TempDir(), "t.adapter")
	os.WriteFile(trules, []byte("name t\ntranspose down_t model.layers.0.mlp.down_proj.weight\n"), 0o644)
	code, out, _ = ckptcheck(t, "diff", pub, tdir, "--adapter-file", trules, "--explain", "model.layers.0.mlp.down_proj.weight")
	if code != 0 || !strings.Contains(out, "exported (adapter t): BF16 [32, 64] <- down_t.mT") ||
		!strings.Contains(out, "stored transposed as [64, 32]: read a tile at a time and transposed") {
		t.Errorf("explain a transposed tensor: %d\n%s", code, out)
	}
	code, out, _ = ckptcheck(t, "diff", pub, tdir, "--adapter-file", trules, "--values", "--format", "json")
	if code != 0 || !strings.Contains(out, `"mismatched": 0`) || !strings.Contains(out, `"code": "needs_adapter"`) {
		t.Errorf("values through a transposed layout: %d\n%s", code, out)
	}
	// An interleaved layout: gate_proj's even and odd rows stored as two
	// tensors, joined a row of each in turn; --explain shows the units,
	// --values reads the rows in turn, and the halves swapped mismatch.
	for _, swapped := range []bool{false, true} {
		idir := t.TempDir()
		var its []fixture.Tensor
		for _, x := range fixture.Tiny.Tensors(safetensors.BF16) {
			if x.Name != "model.layers.0.mlp.gate_proj.weight" {
				its = append(its, x)
				continue
			}
			row := int(x.Shape[1]) * 2
			var halves [2][]byte
			for r := range int(x.Shape[0]) {
				halves[r%2] = append(halves[r%2], x.Data[r*row:(r+1)*row]...)
			}
			if swapped {
				halves[0], halves[1] = halves[1], halves[0]
			}
			half := []uint64{x.Shape[0] / 2, x.Shape[1]}
			its = append(its, fixture.Tensor{Name: "gate_even", DType: x.DType, Shape: half, Data: halves[0]},
				fixture.Tensor{Name: "gate_odd", DType: x.DType, Shape: half, Data: halves[1]})
		}
		fixture.WriteFile(filepath.Join(idir, "model.safetensors"), its, nil)
		irules := filepath.Join(t.TempDir(), "i.adapter")
		os.WriteFile(irules, []byte("name i\nconcat gate_even+gate_odd model.layers.0.mlp.gate_proj.weight dim=0 every=1\n"), 0o644)
		if !swapped {
			code, out, _ = ckptcheck(t, "diff", pub, idir, "--adapter-file", irules, "--explain", "model.layers.0.mlp.gate_proj.weight")
			if code != 0 || !strings.Contains(out, "<- interleave(gate_even, gate_odd; 1 along dim 0)") || !strings.Contains(out, "interleaved: a unit of each source in turn, units of [64 64] bytes") {
				t.Errorf("explain an interleaved tensor: %d\n%s", code, out)
			}
		}
		code, out, _ = ckptcheck(t, "diff", pub, idir, "--adapter-file", irules, "--values", "--format", "json")
		if ok := code == 0 && strings.Contains(out, `"mismatched": 0`); ok == swapped {
			t.Errorf("values through an interleaved layout, halves swapped %v: %d\n%s", swapped, code, out)
		}
	}
	// A tile read transposed inside a tensor: gate_proj's first 8 rows
	// stored transposed, the rest as they are (DeepSeek's kv_b_proj in
	// llama.cpp's split); --explain marks the tile, --values reads it.
	kdir := t.TempDir()
	var kts []fixture.Tensor
	for _, x := range fixture.Tiny.Tensors(safetensors.BF16) {
		if x.Name != "model.layers.0.mlp.gate_proj.weight" {
			kts = append(kts, x)
			continue
		}
		cols := int(x.Shape[1])
		tile := make([]byte, 8*cols*2)
		for r := range 8 {
			for c := range cols {
				copy(tile[2*(c*8+r):], x.Data[2*(r*cols+c):2*(r*cols+c)+2])
			}
		}
		kts = append(kts, fixture.Tensor{Name: "head_t", DType: x.DType, Shape: []uint64{uint64(cols), 8}, Data: tile},
			fixture.Tensor{Name: "rest", DType: x.DType, Shape: []uint64{x.Shape[0] - 8, uint64(cols)}, Data: x.Data[8*cols*2:]})
	}
	fixture.WriteFile(filepath.Join(kdir, "model.safetensors"), kts, nil)
	krules := filepath.Join(t.TempDir(), "k.adapter")
	os.WriteFile(krules, []byte("name k\ntranspose head_t head\nthen\nconcat head+rest model.layers.0.mlp.gate_proj.weight dim=0\n"), 0o644)
	code, out, _ = ckptcheck(t, "diff", pub, kdir, "--adapter-file", krules, "--explain", "model.layers.0.mlp.gate_proj.weight")
	if code != 0 || !strings.Contains(out, "<- join(head_t.mT, rest along dim 0, tiles transposed)") || !strings.Contains(out, "bytes 0..512 of head_t in") ||
		!strings.Contains(out, ", a tile stored transposed") {
		t.Errorf("explain a tiled tensor: %d\n%s", code, out)
	}
	code, out, _ = ckptcheck(t, "diff", pub, kdir, "--adapter-file", krules, "--values", "--format", "json")
	if code != 0 || !strings.Contains(out, `"mismatched": 0`) {
		t.Errorf("values through a tile read transposed: %d\n%s", code, out)
	}
	bad := filepath.Join(t.TempDir(), "bad.adapter")
	os.WriteFile(bad, []byte("name bad\nfrobnicate x\n"), 0o644)
	if code, _, stderr := ckptcheck(t, "diff", pub, dir, "--adapter-file", bad); code != 2 || !strings.Contains(stderr, "bad.adapter:2") {
		t.Errorf("bad adapter file: exit %d, %s", code, stderr)
	}
}

func TestInspectTreeManySiblings(t *testing.T) {
	var ts []fixture.Tensor
	for i := range 50000 {
		ts = append(ts, fixture.Tensor{Name: fmt.Sprintf("w%d.bias", i), DType: safetensors.U8, Shape: []uint64{0}})
	}
	p := filepath.Join(t.TempDir(), "wide.safetensors")
	if err := fixture.WriteFile(p, ts, nil); err != nil {
		t.Fatal(err)
	}
	if code, out, _ := ckptcheck(t, "inspect", "--tree", "--depth", "1", p); code != 0 || !strings.Contains(out, "50,000 tensors") {
		t.Errorf("exit %d, %d bytes of output", code, len(out))
	}
}
