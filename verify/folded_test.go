package verify

import (
	"context"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/quant"
	"github.com/ckptcheck/ckptcheck/safetensors"
	"github.com/ckptcheck/ckptcheck/verify/internal/values"
)

// The test side's AWQ: AutoAWQ's pseudo_quantize_tensor (casper-hansen/
// AutoAWQ awq/quantize/quantizer.py at 93d7e8e0f28d14aaf3126af580556f01939dc7ca: scales = (max − min)/15, zeros =
// clamp(−round(min/scales), 0, 15), q = clamp(round(w/scales) + zeros,
// 0, 15)) packed as WQLinear_GEMM stores it (quant.AWQ's layout), after
// apply_scale's scale_ln_fcs (awq/quantize/scale.py at
// 0a6a6d025346304687ba69872168ef786fcccd95: ln.weight.div_(scales),
// fc.weight.mul_(scales.view(1, -1))).

const (
	inputNorm = "model.layers.0.input_layernorm.weight"
	vProj     = "model.layers.0.self_attn.v_proj.weight"
)

// valuesOf decodes a fixture tensor.
func valuesOf(t fixture.Tensor) []float64 {
	v := make([]float64, len(t.Data)/(t.DType.Bits()/8))
	quant.DecodeFloat64(t.DType, t.Data, v)
	return v
}

// awqScales are per-input-channel scales in [0.5, 2], as AWQ's search
// finds them (x_mean^α, normalized).
func awqScales(n int, seed uint64) []float64 {
	s := make([]float64, n)
	x := seed*0x9E3779B97F4A7C15 + 1
	for i := range s {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		s[i] = math.Exp2(float64(x>>40)/float64(1<<24)*2 - 1)
	}
	return s
}

// TestFoldedScale: an AWQ export whose input_layernorm's scales were
// folded into q/k/v_proj (and divided out of the norm) passes, each weight
// and the norm reported quantized_scale_folded; a per-column scale the norm
// does not undo, a weight from elsewhere, or a norm divided by other
// scales are still errors.
func TestFoldedScale(t *testing.T) {
	const in, group = 64, 32
	norm := fixture.Map(bf16Weights(inputNorm, 1, in), safetensors.BF16, func(_ int, v float32) float32 { return 1 + 4*v })
	weights := []fixture.Tensor{bf16Weights(qProj, 2, 32, in), bf16Weights(kProj, 3, 16, in), bf16Weights(vProj, 4, 16, in)}
	src := append([]fixture.Tensor{norm}, weights...)
	pub := filepath.Join(t.TempDir(), "published")
	if err := fixture.WriteSharded(pub, src, 1, nil); err != nil {
		t.Fatal(err)
	}
	cfg := map[string]any{"model_type": "llama", "quantization_config": map[string]any{"quant_method": "awq", "bits": 4, "group_size": group, "version": "gemm", "zero_point": true}}
	s := awqScales(in, 7)
	// build folds s into every weight and 1/normS into the norm; weight
	// name's values replaced by other's when other is set.
	build := func(normS []float64, other map[string]fixture.Tensor) []fixture.Tensor {
		g := valuesOf(norm)
		gf := make([]float32, in)
		for j := range gf {
			gf[j] = float32(g[j] / normS[j])
		}
		out := []fixture.Tensor{{Name: inputNorm, DType: safetensors.BF16, Shape: []uint64{in}, Data: fixture.Encode(gf, safetensors.BF16)}}
		for _, w := range weights {
			x := w
			if o, ok := other[w.Name]; ok {
				x = o
			}
			v := valuesOf(x)
			for i := range v {
				v[i] *= s[i%in]
			}
			out = append(out, quantizeAWQValues(w.Name, v, w.Shape[0], in, group, 1, 0)...)
		}
		return out
	}
	ones := make([]float64, in)
	for j := range ones {
		ones[j] = 1
	}
	for _, c := range []struct {
		name   string
		export []fixture.Tensor
		want   []string
	}{
		{"folded", build(s, nil), []string{"info quantized_scale_folded " + inputNorm, "info quantized_scale_folded " + kProj,
			"info quantized_scale_folded " + qProj, "info quantized_scale_folded " + vProj}},
		{"per-column scale without the norm's reciprocal", build(ones, nil), []string{"error quantization_error " + kProj,
			"error quantization_error " + qProj, "error quantization_error " + vProj}},
		{"norm divided by other scales", build(awqScales(in, 8), nil), []string{"error quantization_error " + kProj,
			"error quantization_error " + qProj, "error quantization_error " + vProj, "error value_mismatch " + inputNorm}},
		{"folded, q_proj another layer's weight", build(s, map[string]fixture.Tensor{qProj: bf16Weights(qProj, 9, 32, in)}),
			[]string{"error quantization_error " + qProj, "error reinitialized " + qProj, "info quantized_scale_folded " + inputNorm,
				"info quantized_scale_folded " + kProj, "info quantized_scale_folded " + vProj}},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := diffPaths(t, pub, export(t, c.export, cfg), DiffOptions{WeightsOnly: true})
			if got := notable(d.Findings); len(got) != 0 {
				t.Fatalf("structure: %v", d.Findings)
			}
			rep, err := d.CompareValues(context.Background(), ValueOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := notable(rep.Findings); !slices.Equal(got, c.want) {
				t.Errorf("findings %q, want %q\n%v", got, c.want, rep.Findings)
			}
			for _, f := range rep.Findings {
				if f.Code == CodeQuantizationError && c.name == "norm divided by other scales" && !strings.Contains(f.Message, "does not hold its reciprocal") {
					t.Errorf("finding %v", f)
				}
			}
			for _, s := range rep.Tensors {
				if folded := slices.Contains(c.want, "info quantized_scale_folded "+s.Key); folded != (s.Folded != nil) {
					t.Errorf("%s: folded %+v", s.Key, s.Folded)
				}
			}
		})
	}
}

// TestFoldedScaleMerge: in partitions, each tensor's verdict is the whole
// run's though its norm or weights are in another partition.
func TestFoldedScaleMerge(t *testing.T) {
	const in, group = 64, 32
	norm := fixture.Map(bf16Weights(inputNorm, 1, in), safetensors.BF16, func(_ int, v float32) float32 { return 1 + 4*v })
	weights := []fixture.Tensor{bf16Weights(qProj, 2, 32, in), bf16Weights(kProj, 3, 16, in)}
	pub := filepath.Join(t.TempDir(), "published")
	if err := fixture.WriteSharded(pub, append([]fixture.Tensor{norm}, weights...), 1, nil); err != nil {
		t.Fatal(err)
	}
	s := awqScales(in, 7)
	g := valuesOf(norm)
	gf := make([]float32, in)
	for j := range gf {
		gf[j] = float32(g[j] / s[j])
	}
	exp := []fixture.Tensor{{Name: inputNorm, DType: safetensors.BF16, Shape: []uint64{in}, Data: fixture.Encode(gf, safetensors.BF16)}}
	for _, w := range weights {
		v := valuesOf(w)
		for i := range v {
			v[i] *= s[i%in]
		}
		exp = append(exp, quantizeAWQValues(w.Name, v, w.Shape[0], in, group, 1, 0)...)
	}
	cfg := map[string]any{"model_type": "llama", "quantization_config": map[string]any{"quant_method": "awq", "bits": 4, "group_size": group}}
	dir := export(t, exp, cfg)
	run := func(p Partition) *Report {
		d := diffPaths(t, pub, dir, DiffOptions{WeightsOnly: true})
		values, err := d.CompareValues(context.Background(), ValueOptions{Partition: p})
		if err != nil {
			t.Fatal(err)
		}
		return roundTrip(t, NewValuesReport(ValuesReportInput{FailOn: Error, Comparison: d, Values: values, Partition: p,
			Fingerprint: d.Fingerprint(ValuePolicy{}, nil)}))
	}
	whole := run(Partition{})
	if got := codesOf(whole.Findings)[CodeQuantizedScaleFolded]; got != 3 {
		t.Fatalf("whole run: %v", whole.Findings)
	}
	var parts []*Report
	for i := range 3 {
		parts = append(parts, run(Partition{Index: i, Count: 3}))
	}
	merged, err := Merge(mergeInputs(parts), Error)
	if err != nil {
		t.Fatal(err)
	}
	sameResult(t, "folded", merged, whole)
}

func TestFoldedNorm(t *testing.T) {
	for name, want := range map[string]string{
		qProj: inputNorm, kProj: inputNorm, vProj: inputNorm,
		"model.layers.3.self_attn.o_proj.weight":              "",
		"model.layers.3.mlp.gate_proj.weight":                 "model.layers.3.post_attention_layernorm.weight",
		"model.layers.3.mlp.up_proj.weight":                   "model.layers.3.post_attention_layernorm.weight",
		"model.layers.3.mlp.down_proj.weight":                 "",
		"model.layers.3.mlp.experts.7.gate_proj.weight":       "model.layers.3.post_attention_layernorm.weight",
		"model.layers.3.block_sparse_moe.experts.7.w1.weight": "",
		"model.layers.3.self_attn.q_proj.bias":                "",
		"lm_head.weight":                                      "",
		"model.embed_tokens.weight":                           "",
	} {
		if got := foldedNorm(name); got != want {
			t.Errorf("foldedNorm(%q) = %q, want %q", name, got, want)
		}
	}
}

// TestFitColumns: a factor per column is fitted exactly; a zero weight
// or a negative factor is no scale.
func TestFitColumns(t *testing.T) {
	// Column j: p = (1, 2), e = (j+1)·p.
	c := &values.ColumnStats{PP: []float64{5, 5, 5}, EE: []float64{5, 20, 45}, PE: []float64{5, 10, 15}}
	f := fitColumns(c, 0.01, 2)
	if f.bad || !f.explained || f.residual > 1e-12 || f.fmin != 1 || f.fmax != 3 {
		t.Errorf("%+v", f)
	}
	norm := &values.ColumnStats{PP: []float64{4, 4, 4}, PE: []float64{4, 2, 4.0 / 3}} // e = p/(j+1)
	if r := f.reciprocal(norm); r > 1e-12 {
		t.Errorf("reciprocal %v", r)
	}
	if r := f.reciprocal(&values.ColumnStats{PP: []float64{4, 4, 4}, PE: []float64{4, 4, 4}}); r < 0.5 {
		t.Errorf("reciprocal of an unchanged norm %v", r)
	}
	for _, bad := range []*values.ColumnStats{
		{PP: []float64{0, 0}, EE: []float64{1, 1}, PE: []float64{0, 0}},
		{PP: []float64{5, 5}, EE: []float64{5, 5}, PE: []float64{5, -5}},
	} {
		if f := fitColumns(bad, 0.01, 2); !f.bad {
			t.Errorf("%+v: %+v", bad, f)
		}
	}
}

// TestFoldedScaleReadsLittle: a faithful AWQ export without folded scales
// is not read again, and one whose weights fail while the norm holds the
// published values reads only the norm again.
func TestFoldedScaleReadsLittle(t *testing.T) {
	const in, group = 64, 32
	norm := fixture.Map(bf16Weights(inputNorm, 1, in), safetensors.BF16, func(_ int, v float32) float32 { return 1 + 4*v })
	q := bf16Weights(qProj, 2, 32, in)
	pub := filepath.Join(t.TempDir(), "published")
	if err := fixture.WriteSharded(pub, []fixture.Tensor{norm, q}, 1, nil); err != nil {
		t.Fatal(err)
	}
	cfg := map[string]any{"model_type": "llama", "quantization_config": map[string]any{"quant_method": "awq", "bits": 4, "group_size": group}}
	s := awqScales(in, 7)
	read := func(scale bool) int64 {
		v := valuesOf(q)
		for i := range v {
			if scale {
				v[i] *= s[i%in]
			}
		}
		d := diffPaths(t, pub, export(t, append([]fixture.Tensor{norm}, quantizeAWQValues(qProj, v, 32, in, group, 1, 0)...), cfg), DiffOptions{WeightsOnly: true})
		rep, err := d.CompareValues(context.Background(), ValueOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if scale != (len(rep.Findings) > 0) {
			t.Errorf("scaled %v: %v", scale, rep.Findings)
		}
		return rep.BytesRead
	}
	// The faithful export reads both sides once: its norm, and the weight's
	// parts against the published BF16.
	once := int64(2*2*in) + 2*32*in + int64(in*32/2) + 2*(in/group)*32 + 4*(in/group)*32/8
	if got := read(false); got != once {
		t.Errorf("faithful: read %d bytes, want %d", got, once)
	}
	if got := read(true); got != once+2*2*in {
		t.Errorf("scaled, norm unchanged: read %d bytes, want %d (the norm again)", got, once+2*2*in)
	}
}
