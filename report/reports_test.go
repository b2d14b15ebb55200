package report

import (
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ckptcheck/ckptcheck/safetensors"
	"github.com/ckptcheck/ckptcheck/verify"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// goldenOptions make every renderer's output stable.
var goldenOptions = Options{
	Clock:         func() time.Time { return time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC) },
	Hostname:      "ci-runner",
	Version:       "v1.2.3-test",
	CommandsToken: "0123456789abcdef0123456789abcdef",
}

// validateReport is a validate of two checkpoints: one good, one with a
// truncated shard, a stray file and a config that disagrees.
func validateReport() *verify.Report {
	inputs := []verify.Input{
		{Path: "good", Index: "good/model.safetensors.index.json", Config: "good/config.json",
			Files: []string{"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}, Tensors: 46},
		{Path: "broken", Index: "broken/model.safetensors.index.json", Config: "broken/config.json",
			Files: []string{"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}, Tensors: 46},
	}
	findings := []verify.Finding{
		{Code: verify.CodeMetadataIncompleteBuffer, Severity: verify.Error, File: "broken/model-00002-of-00002.safetensors",
			Message: "tensors end at data byte 22720 but the file has 22717 data bytes (truncated)"},
		{Code: verify.CodeIndexKeyNotInShard, Severity: verify.Error, File: "broken/model-00002-of-00002.safetensors", Key: "model.norm.weight",
			Message: "the index maps it to this shard, whose header lacks it"},
		{Code: verify.CodeUnreferencedShard, Severity: verify.Warning, File: "broken/consolidated.safetensors",
			Message: "a .safetensors file beside the index that the index does not name; it was not checked"},
		{Code: verify.CodeConfigMismatch, Severity: verify.Warning, File: "broken/config.json",
			Message: "num_hidden_layers is 4 but the tensors have 3 layers"},
		{Code: verify.CodeUnalignedData, Severity: verify.Warning, File: "broken/model-00001-of-00002.safetensors",
			Message: "header length 8191 is not a multiple of 8"},
	}
	return verify.NewReport("validate", verify.Error, inputs, findings)
}

// diffReport is a diff --values of a 4-layer MoE model whose export lost a
// norm, re-initialized an expert, holds a NaN and drifted by a different
// amount per layer.
func diffReport() *verify.Report {
	inputs := []verify.Input{
		{Side: verify.Published, Path: "published", Index: "published/model.safetensors.index.json", Config: "published/config.json",
			Files: []string{"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}, Tensors: 40, Adapter: "hf"},
		{Side: verify.Exported, Path: "exported", Config: "exported/config.json",
			Files: []string{"model.safetensors"}, Tensors: 39, Adapter: "torchtitan-qwen3"},
	}
	var findings []verify.Finding
	v := &verify.ValueReport{Tolerant: true}
	stat := func(key string, rel float64) {
		s := verify.TensorStats{Key: key, Published: safetensors.BF16, Exported: safetensors.F32, Elements: 4096,
			RelL2: verify.Float(rel), Cosine: verify.Float(1 - rel*rel/2), MaxAbsDiff: verify.Float(rel / 10),
			MeanAbsDiff: verify.Float(rel / 100), MaxAt: []uint64{3, 17}, PublishedAt: 0.015625, ExportedAt: verify.Float(0.015625 + rel/10),
			Tolerance: verify.Tolerance{Rtol: 1e-2}}
		switch {
		case rel == 0:
			s.BitIdentical = false
			v.Equal++
		case rel > 1e-2:
			s.Mismatches = 12
			v.Mismatched++
		default:
			v.WithinTolerance++
		}
		v.Compared++
		v.Tensors = append(v.Tensors, s)
	}
	stat("model.embed_tokens.weight", 0)
	for l := range 4 {
		p := fmt.Sprintf("model.layers.%d.", l)
		for i, kind := range []string{"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj"} {
			stat(p+kind+".weight", math.Pow(10, -float64(6-l-i%2)))
		}
		if l != 2 {
			stat(p+"self_attn.k_norm.weight", 0)
		} else {
			findings = append(findings, verify.Finding{Code: verify.CodeMissingKey, Severity: verify.Error, Key: p + "self_attn.k_norm.weight",
				Message: "in published, missing from exported"})
		}
		stat(p+"mlp.gate.weight", 1e-3)
		for e := range 2 {
			ep := fmt.Sprintf("%smlp.experts.%d.", p, e)
			stat(ep+"gate_proj.weight", 1e-4*float64(e+1))
			stat(ep+"up_proj.weight", 2e-4)
			if l == 1 && e == 1 {
				v.Tensors = append(v.Tensors, verify.TensorStats{Key: ep + "down_proj.weight", Published: safetensors.BF16, Exported: safetensors.F32,
					Elements: 4096, RelL2: 1.41, Cosine: 0.002, MaxAbsDiff: 0.12, MaxAt: []uint64{0, 5}, Mismatches: 4001})
				v.Compared++
				v.Mismatched++
				findings = append(findings, verify.Finding{Code: verify.CodeReinitialized, Severity: verify.Error, Key: ep + "down_proj.weight",
					Message: "cosine 0.002, relative L2 1.41: unrelated to the published values"})
				continue
			}
			stat(ep+"down_proj.weight", 3e-4)
		}
	}
	v.Tensors = append(v.Tensors, verify.TensorStats{Key: "model.norm.weight", Published: safetensors.BF16, Exported: safetensors.F32,
		Elements: 32, RelL2: verify.Float(math.NaN()), Cosine: verify.Float(math.NaN()), MaxAbsDiff: 0, NonFinite: 1, MaxAt: []uint64{7}})
	v.Compared++
	v.Mismatched++
	findings = append(findings,
		verify.Finding{Code: verify.CodeNonFinite, Severity: verify.Error, Side: verify.Exported, Key: "model.norm.weight",
			Message: "1 NaN or Inf where the published value is finite, first at [7]"},
		verify.Finding{Code: verify.CodeShapeMismatch, Severity: verify.Error, Key: "lm_head.weight",
			Message: "published [128, 32], exported [32, 128] (transposed)", Published: []uint64{128, 32}, Exported: []uint64{32, 128}},
		verify.Finding{Code: verify.CodeAdapterDropped, Severity: verify.Warning, Side: verify.Exported, Key: "layers.0.moe.expert_bias",
			Physical: "layers.0.moe.expert_bias", Message: "not round-trippable"},
		verify.Finding{Code: verify.CodeUnchanged, Severity: verify.Info, Message: "5 tensors are bit-identical to the published ones",
			Keys: []string{"model.embed_tokens.weight"}},
	)
	for _, t := range v.Tensors {
		if t.Mismatches > 0 && t.Cosine > 0.5 {
			findings = append(findings, verify.Finding{Code: verify.CodeValueMismatch, Severity: verify.Error, Key: t.Key,
				Message: fmt.Sprintf("%d of %d elements outside rtol 0.01; worst at [3, 17]", t.Mismatches, t.Elements)})
		}
	}
	for _, t := range v.Tensors {
		findings = append(findings, verify.Finding{Code: verify.CodeDTypeMismatch, Severity: verify.Warning, Key: t.Key,
			Message: "published BF16, exported F32", Published: safetensors.BF16, Exported: safetensors.F32})
	}
	r := verify.NewReport("diff", verify.Error, inputs, findings)
	r.Values = v
	return r
}

// hostileNames are tensor and file names that try to break out of every
// format: workflow commands, escapes GitHub decodes, Markdown, HTML,
// script, XML, terminal escapes, mentions.
var hostileNames = []string{
	"a\n::error title=pwned::injected",
	"b\r::warning::injected",
	"c%0A::error::decoded%25",
	"d::set-output name=x::y",
	"e ##[add-mask]secret",
	"f,title=x:y",
	"g`|*_[link](http://example.com) @octocat <b>bold</b>",
	"h</script><script>alert(1)</script>",
	"i]]></failure><failure>&amp;\x00\x1b[31m",
	"j\u2028k\u0085l",
	"::stop-commands::0123",
}

// hostileReport is a diff whose every finding carries a hostile name.
func hostileReport() *verify.Report {
	inputs := []verify.Input{
		{Side: verify.Published, Path: "pub\n::error::path", Files: []string{"m.safetensors"}, Tensors: 2},
		{Side: verify.Exported, Path: "exp`|<x>", Files: []string{"m,1:2.safetensors"}, Tensors: 2},
	}
	var findings []verify.Finding
	for i, name := range hostileNames {
		code, sev := verify.CodeMissingKey, verify.Error
		if i%2 == 1 {
			code, sev = verify.CodeUnexpectedKey, verify.Warning
		}
		findings = append(findings, verify.Finding{Code: code, Severity: sev, Key: name, File: "dir/" + name + ".safetensors",
			Message: "message for " + name})
	}
	return verify.NewReport("diff", verify.Error, inputs, findings)
}

func render(t *testing.T, format string, r *verify.Report, opt Options) string {
	t.Helper()
	var b strings.Builder
	if err := Write(&b, format, r, opt); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./report -update to write it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file; if the change is meant, run go test ./report -run %s -update\n%s",
			path, t.Name(), firstDifference(string(want), got))
	}
}

func firstDifference(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := range max(len(wl), len(gl)) {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return fmt.Sprintf("line %d:\nwant %q\ngot  %q", i+1, w, g)
		}
	}
	return ""
}

var goldenFormats = []struct{ format, ext string }{
	{"github", "github.txt"}, {"markdown", "md"}, {"junit", "junit.xml"}, {"sarif", "sarif.json"}, {"html", "html"},
}

var goldenReports = []struct {
	name   string
	report func() *verify.Report
}{
	{"validate", validateReport}, {"diff", diffReport}, {"hostile", hostileReport},
}

func TestGolden(t *testing.T) {
	for _, rep := range goldenReports {
		for _, f := range goldenFormats {
			t.Run(rep.name+"/"+f.format, func(t *testing.T) {
				golden(t, rep.name+"."+f.ext, render(t, f.format, rep.report(), goldenOptions))
			})
		}
	}
}
