package verify

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/adapter"
	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// export writes a single-file export of tensors (no __metadata__, as
// torchtitan writes it) with an optional config, and returns its directory.
func export(t *testing.T, tensors []fixture.Tensor, config map[string]any) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "exported")
	if err := fixture.WriteFile(filepath.Join(dir, "model-00001-of-00001.safetensors"), tensors, nil); err != nil {
		t.Fatal(err)
	}
	if config != nil {
		if err := fixture.WriteJSON(filepath.Join(dir, "config.json"), config); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func upcastAll(ts []fixture.Tensor) []fixture.Tensor {
	out := make([]fixture.Tensor, len(ts))
	for i, t := range ts {
		out[i] = fixture.Upcast(t)
	}
	return out
}

func diffPaths(t testing.TB, pub, exp string, opt DiffOptions) *Comparison {
	t.Helper()
	d, err := Diff(context.Background(), openCheckpoint(t, pub), openCheckpoint(t, exp), opt)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// notable lists "severity code key" for every finding but the dtype
// warnings and weights_only_export (these exports are weights only; the
// files beside the weights have their own tests).
func notable(fs []Finding) []string {
	var out []string
	for _, f := range fs {
		if f.Code == CodeWeightsOnlyExport {
			continue
		}
		if f.Code != CodeDTypeMismatch || f.Severity == Error {
			out = append(out, fmt.Sprintf("%s %s %s", f.Severity, f.Code, f.Key))
		}
	}
	slices.Sort(out)
	return out
}

func TestDiffScenarios(t *testing.T) {
	q := fixture.Tiny
	bf16 := q.Tensors(safetensors.BF16)
	untied := q
	untied.Tied = false
	without := func(ts []fixture.Tensor, names ...string) []fixture.Tensor {
		return slices.DeleteFunc(slices.Clone(ts), func(t fixture.Tensor) bool { return slices.Contains(names, t.Name) })
	}
	rename := func(ts []fixture.Tensor, f func(string) string) []fixture.Tensor {
		out := slices.Clone(ts)
		for i := range out {
			out[i].Name = f(out[i].Name)
		}
		return out
	}
	embedding := bf16[0]
	if embedding.Name != "model.embed_tokens.weight" {
		t.Fatal("fixture order changed")
	}
	lmHead := embedding
	lmHead.Name = "model.lm_head.weight"
	head := embedding // a copy of the tied embedding, as an export may keep it
	head.Name = "lm_head.weight"

	tests := []struct {
		name        string
		published   func(t *testing.T) string
		exported    func(t *testing.T) string
		opt         DiffOptions
		want        []string
		wantAdapter string
		dtypeWarns  int
	}{
		{
			name:      "torchtitan F32 export",
			published: published,
			exported:  func(t *testing.T) string { return export(t, upcastAll(bf16), nil) },
			want:      nil, wantAdapter: "hf", dtypeWarns: len(bf16),
		},
		{
			name:      "raw wrapper state dict",
			published: published,
			exported: func(t *testing.T) string {
				return export(t, append(rename(bf16, func(n string) string { return "model." + n }), lmHead), nil)
			},
			// The wrapper keeps the tied head the published side omits;
			// transformers would not load model.model.* as it is.
			want: []string{"info tied_weight lm_head.weight", "warning needs_adapter "}, wantAdapter: "torchtitan-hf",
		},
		{
			name:      "broken export",
			published: published,
			exported: func(t *testing.T) string {
				ts := without(bf16, "model.layers.1.self_attn.k_norm.weight")
				for i, x := range ts {
					if x.Name == "model.layers.3.mlp.down_proj.weight" {
						ts[i].Shape = []uint64{x.Shape[1], x.Shape[0]}
					}
				}
				ts = append(ts, fixture.Tensor{Name: "model.causal_mask", DType: safetensors.BOOL, Shape: []uint64{4, 4}, Data: make([]byte, 16)})
				return export(t, ts, nil)
			},
			want: []string{
				"error missing_key model.layers.1.self_attn.k_norm.weight",
				"error shape_mismatch model.layers.3.mlp.down_proj.weight",
				"error unexpected_key model.causal_mask",
			},
			wantAdapter: "hf",
		},
		{
			name: "untied export lost lm_head",
			published: func(t *testing.T) string {
				dir := filepath.Join(t.TempDir(), "published")
				fixture.WriteSharded(dir, untied.Tensors(safetensors.BF16), 2, untied.Config("bfloat16"))
				return dir
			},
			exported: func(t *testing.T) string {
				return export(t, without(untied.Tensors(safetensors.BF16), "lm_head.weight"), nil)
			},
			want: []string{"error missing_key lm_head.weight"}, wantAdapter: "hf",
		},
		{
			name:      "tied, export keeps a copy of the head",
			published: published,
			exported: func(t *testing.T) string {
				return export(t, append(slices.Clone(bf16), head), nil)
			},
			// 47 tensors against 46, explained.
			want: []string{"info tied_weight lm_head.weight"}, wantAdapter: "hf",
		},
		{
			name: "tied, published has the head, export dropped it",
			published: func(t *testing.T) string {
				dir := filepath.Join(t.TempDir(), "published")
				fixture.WriteSharded(dir, append(slices.Clone(bf16), head), 2, q.Config("bfloat16"))
				return dir
			},
			exported: func(t *testing.T) string { return export(t, bf16, nil) },
			want:     []string{"info tied_weight lm_head.weight"}, wantAdapter: "hf",
		},
		{
			name: "no config: tie assumed from the embedding's shape",
			published: func(t *testing.T) string {
				dir := filepath.Join(t.TempDir(), "published")
				fixture.WriteSharded(dir, bf16, 2, nil)
				return dir
			},
			exported: func(t *testing.T) string {
				return export(t, append(slices.Clone(bf16), head), nil)
			},
			want: []string{"warning tied_weight lm_head.weight"}, wantAdapter: "hf",
		},
		{
			name:      "--tied false overrides the config",
			published: published,
			exported: func(t *testing.T) string {
				return export(t, append(slices.Clone(bf16), head), nil)
			},
			opt:  DiffOptions{Tied: ptr(false)},
			want: []string{"error unexpected_key lm_head.weight"}, wantAdapter: "hf",
		},
		{
			name:      "compiled DDP wrappers",
			published: published,
			exported: func(t *testing.T) string {
				return export(t, rename(bf16, func(n string) string { return "module._orig_mod." + n }), nil)
			},
			want: []string{"warning needs_adapter "}, wantAdapter: "ddp,compile",
		},
		{
			name:      "--dtype bf16 against an F32 export",
			published: published,
			exported:  func(t *testing.T) string { return export(t, upcastAll(bf16), nil) },
			opt:       DiffOptions{DType: ptr(safetensors.BF16)},
			want:      repeat("error dtype_mismatch ", bf16), wantAdapter: "hf",
		},
		{
			name:      "custom rename",
			published: published,
			exported: func(t *testing.T) string {
				return export(t, rename(bf16, func(n string) string { return "student." + strings.Replace(n, "model.", "backbone.", 1) }), nil)
			},
			opt:  DiffOptions{Exported: SideOptions{Extra: adapter.Chain{mustRename(t, `^student\.backbone\.=model.`)}}},
			want: []string{"warning needs_adapter "}, wantAdapter: `rename=^student\.backbone\.=model.`,
		},
		{
			name:      "adapter collision",
			published: published,
			exported: func(t *testing.T) string {
				norm := bf16[1]
				norm.Name = "module.model.norm.weight"
				return export(t, append(slices.Clone(bf16), norm), nil)
			},
			want: []string{"error adapter_collision model.norm.weight"}, wantAdapter: "ddp",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := diffPaths(t, tt.published(t), tt.exported(t), tt.opt)
			if got := notable(d.Findings); !slices.Equal(got, tt.want) {
				t.Errorf("findings:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(tt.want, "\n  "))
			}
			if d.Exported.View.Adapter != tt.wantAdapter {
				t.Errorf("exported adapter %s, want %s", d.Exported.View.Adapter, tt.wantAdapter)
			}
			warns := 0
			for _, f := range d.Findings {
				if f.Code == CodeDTypeMismatch && f.Severity == Warning {
					warns++
				}
			}
			if warns != tt.dtypeWarns {
				t.Errorf("%d dtype warnings, want %d", warns, tt.dtypeWarns)
			}
		})
	}
}

func TestRotaryBuffersIgnored(t *testing.T) {
	bf16 := fixture.Tiny.Tensors(safetensors.BF16)
	withBuffers := append(slices.Clone(bf16), fixture.Tensor{Name: "model.layers.0.self_attn.rotary_emb.inv_freq",
		DType: safetensors.F32, Shape: []uint64{4}, Data: make([]byte, 16)})
	for _, dirs := range [][2]string{{published(t), export(t, withBuffers, nil)}, {export(t, withBuffers, fixture.Tiny.Config("bfloat16")), export(t, bf16, nil)}} {
		if d := diffPaths(t, dirs[0], dirs[1], DiffOptions{WeightsOnly: true}); len(d.Findings) != 0 {
			t.Errorf("%v", d.Findings)
		}
	}
}

func TestDiffTransposedMessage(t *testing.T) {
	bf16 := fixture.Tiny.Tensors(safetensors.BF16)
	for i, x := range bf16 {
		if x.Name == "model.layers.0.mlp.down_proj.weight" {
			bf16[i].Shape = []uint64{x.Shape[1], x.Shape[0]}
		}
	}
	d := diffPaths(t, published(t), export(t, bf16, nil), DiffOptions{})
	if f := only(t, d.Findings, CodeShapeMismatch); f != nil &&
		(f.Key != "model.layers.0.mlp.down_proj.weight" || f.Message != "published [32, 64], exported [64, 32] (transposed)") {
		t.Errorf("finding %v", f)
	}
}

func TestDiffValidatesBothSides(t *testing.T) {
	exp := export(t, fixture.Tiny.Tensors(safetensors.BF16), nil)
	p := filepath.Join(exp, "model-00001-of-00001.safetensors")
	resize(t, p, -1)
	d := diffPaths(t, published(t), exp, DiffOptions{})
	if f := only(t, d.Findings, CodeMetadataIncompleteBuffer); f != nil && (f.Side != Exported || f.File != p) {
		t.Errorf("want metadata_incomplete_buffer on the exported side, in %s: %v", p, f)
	}
}

func TestDiffRealFilesAgainstThemselves(t *testing.T) {
	root := filepath.Join("..", "..", "shared", "realdata")
	if _, err := os.Stat(root); err != nil {
		t.Skipf("real third-party files not found at %s (present in CI)", root)
	}
	n := 0
	err := filepath.WalkDir(root, func(p string, de os.DirEntry, err error) error {
		if err != nil || de.IsDir() || filepath.Ext(p) != ".safetensors" {
			return err
		}
		n++
		if d := diffPaths(t, p, p, DiffOptions{}); len(d.Findings) > 0 {
			t.Errorf("%s: %v", p, d.Findings)
		}
		return nil
	})
	if err != nil || n == 0 {
		t.Fatalf("diffed %d files under %s: %v", n, root, err)
	}
}

func ptr[T any](v T) *T { return &v }

func repeat(prefix string, ts []fixture.Tensor) []string {
	var out []string
	for _, t := range ts {
		out = append(out, prefix+t.Name)
	}
	slices.Sort(out)
	return out
}

func mustRename(t *testing.T, expr string) *adapter.Adapter {
	a, err := adapter.Rename(expr)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// FuzzDiff runs the whole diff, values included, on two arbitrary files, an
// arbitrary config.json beside the export and an arbitrary adapter file:
// whatever they say, it must not panic, hang, or allocate by their numbers,
// and its JSON report must read back as it was written.
func FuzzDiff(f *testing.F) {
	file := func(ts ...fixture.Tensor) []byte {
		var buf bytes.Buffer
		if err := fixture.Write(&buf, ts, nil); err != nil {
			f.Fatal(err)
		}
		return buf.Bytes()
	}
	w := fixture.Tensor{Name: "model.layers.0.mlp.experts.1.gate_proj.weight", DType: safetensors.BF16, Shape: []uint64{2, 2}, Data: []byte{1, 2, 3, 4, 5, 6, 7, 8}}
	stacked := fixture.Tensor{Name: "layers.0.moe.experts.w1", DType: safetensors.BF16, Shape: []uint64{2, 2, 2}, Data: make([]byte, 16)}
	wq := fixture.Tensor{Name: "layers.0.attention.wq.weight", DType: safetensors.F32, Shape: []uint64{4, 1}, Data: make([]byte, 16)}
	cfg := []byte(`{"model_type":"qwen3_moe","num_attention_heads":2,"num_key_value_heads":1,"hidden_size":4,"head_dim":null}`)
	rules := "name fuzz\nauto structural\nunstack layers.{i}.moe.experts.w1 model.layers.{i}.mlp.experts.{e}.gate_proj.weight\nsplit a.{i} b.{i} c.{i} groups=num_key_value_heads\npermute layers.{i}.attention.wq.weight q.{i} heads=num_attention_heads\n"
	f.Add(file(w), file(stacked), cfg, rules)
	f.Add(file(w), file(wq), cfg, rules)
	f.Add(file(w, stacked), file(w), []byte(`{"num_hidden_layers":18446744073709551615}`), "")
	f.Fuzz(func(t *testing.T, a, b, config []byte, adapterText string) {
		dir := t.TempDir()
		pa, pb := filepath.Join(dir, "a", "a.safetensors"), filepath.Join(dir, "b", "b.safetensors")
		os.MkdirAll(filepath.Dir(pa), 0o755)
		os.MkdirAll(filepath.Dir(pb), 0o755)
		os.WriteFile(pa, a, 0o644)
		os.WriteFile(pb, b, 0o644)
		os.WriteFile(filepath.Join(dir, "b", "config.json"), config, 0o644)
		var opt DiffOptions
		if user, err := adapter.Parse("fuzz.adapter", adapterText); err == nil {
			opt.User = []*adapter.Adapter{user}
		}
		d := diffPaths(t, pa, pb, opt)
		values, err := d.CompareValues(context.Background(), ValueOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range append(slices.Clone(d.Findings), values.Findings...) {
			if f.Code == "" || f.Message == "" || strings.Contains(f.Message, "\n") {
				t.Fatalf("finding %v", f)
			}
		}
		rep := NewReport("diff", Error, nil, append(d.Findings, values.Findings...))
		rep.Values = values
		var first, second bytes.Buffer
		if err := rep.WriteJSON(&first); err != nil {
			t.Fatal(err)
		}
		back, err := ReadReport(bytes.NewReader(first.Bytes()))
		if err != nil {
			t.Fatalf("the report does not read back: %v", err)
		}
		if back.WriteJSON(&second); second.String() != first.String() {
			t.Fatalf("read back and written again:\n%s\nwant:\n%s", second.String(), first.String())
		}
	})
}
