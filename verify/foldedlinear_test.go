package verify

import (
	"context"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/internal/fixture"
	"github.com/ckptcheck/ckptcheck/safetensors"
	"github.com/ckptcheck/ckptcheck/verify/internal/values"
)

// A Llama layer as AutoAWQ exports it: every scale apply_scale folds
// (awq/quantize/scale.py at 0a6a6d025346304687ba69872168ef786fcccd95:
// scale_ln_fcs divides the norm by s and multiplies the Linears' columns,
// scale_fc_fc divides fc1's rows, fc1.weight[-scales.size(0):].div_(
// scales.view(-1, 1)), and multiplies fc2's columns), for the pairs
// awq/models/llama.py's get_layers_for_scaling returns at
// 0aa4a596ca81e8890246712e909d9728b8ace8e8: input_layernorm → q/k/v_proj,
// v_proj → o_proj (their shapes are one here), post_attention_layernorm →
// gate/up_proj, up_proj → down_proj; then quantized by quantizeAWQValues.

const (
	oProj    = "model.layers.0.self_attn.o_proj.weight"
	postNorm = "model.layers.0.post_attention_layernorm.weight"
	gateProj = "model.layers.0.mlp.gate_proj.weight"
	upProj   = "model.layers.0.mlp.up_proj.weight"
	downProj = "model.layers.0.mlp.down_proj.weight"
)

const layerHidden, layerInter, layerGroup = 64, 96, 32

const vBias = "model.layers.0.self_attn.v_proj.bias"

// awqLayer is the published layer: the norms near 1, the weights BF16.
func awqLayer() []fixture.Tensor {
	norm := func(name string, seed uint64) fixture.Tensor {
		return fixture.Map(bf16Weights(name, seed, layerHidden), safetensors.BF16, func(_ int, v float32) float32 { return 1 + 4*v })
	}
	return []fixture.Tensor{norm(inputNorm, 1), bf16Weights(qProj, 2, layerHidden, layerHidden), bf16Weights(kProj, 3, 32, layerHidden),
		bf16Weights(vProj, 4, layerHidden, layerHidden), bf16Weights(oProj, 5, layerHidden, layerHidden), norm(postNorm, 6),
		bf16Weights(gateProj, 7, layerInter, layerHidden), bf16Weights(upProj, 8, layerInter, layerHidden), bf16Weights(downProj, 9, layerHidden, layerInter)}
}

// A foldSpec is a scale s folded: norm (if any) divided by it, the rows of
// rows (if any) divided, the columns of cols multiplied.
type foldSpec struct {
	norm, rows string
	cols       []string
	s          []float64
}

// awqFolds are the four folds AutoAWQ makes in the layer.
func awqFolds() []foldSpec {
	return []foldSpec{
		{norm: inputNorm, cols: []string{qProj, kProj, vProj}, s: awqScales(layerHidden, 7)},
		{rows: vProj, cols: []string{oProj}, s: awqScales(layerHidden, 11)},
		{norm: postNorm, cols: []string{gateProj, upProj}, s: awqScales(layerHidden, 13)},
		{rows: upProj, cols: []string{downProj}, s: awqScales(layerInter, 17)},
	}
}

// foldLayer is the export of layer with folds applied, a weight's values
// replaced by other's where other has it, norms BF16 and weights AWQ int4.
func foldLayer(layer []fixture.Tensor, folds []foldSpec, other map[string]fixture.Tensor) []fixture.Tensor {
	vals := map[string][]float64{}
	for _, t := range layer {
		if o, ok := other[t.Name]; ok {
			t = o
		}
		vals[t.Name] = valuesOf(t)
	}
	var out []fixture.Tensor
	for _, t := range layer {
		in := t.Shape[len(t.Shape)-1]
		for _, f := range folds {
			v := vals[t.Name]
			switch {
			case t.Name == f.norm:
				for j := range v {
					v[j] /= f.s[j]
				}
			case t.Name == f.rows:
				for i := range v {
					v[i] /= f.s[uint64(i)/in]
				}
			case f.rows != "" && t.Name == strings.TrimSuffix(f.rows, ".weight")+".bias": // fc1.bias.div_(scales.view(-1))
				for i := range v {
					v[i] /= f.s[i]
				}
			case slices.Contains(f.cols, t.Name):
				for i := range v {
					v[i] *= f.s[uint64(i)%in]
				}
			}
		}
		if len(t.Shape) == 1 {
			f := make([]float32, in)
			for j, x := range vals[t.Name] {
				f[j] = float32(x)
			}
			out = append(out, fixture.Tensor{Name: t.Name, DType: safetensors.BF16, Shape: t.Shape, Data: fixture.Encode(f, safetensors.BF16)})
			continue
		}
		out = append(out, quantizeAWQValues(t.Name, vals[t.Name], t.Shape[0], in, layerGroup, 1, 0)...)
	}
	return out
}

var awqLayerConfig = map[string]any{"model_type": "llama", "quantization_config": map[string]any{"quant_method": "awq", "bits": 4,
	"group_size": layerGroup, "version": "gemm", "zero_point": true}}

// TestFoldedLinear: an AutoAWQ export of a layer with all four folds
// passes, every tensor reported quantized_scale_folded, each read twice
// (every one fails as it is, none a third time); a random scale on
// down_proj's columns whose reciprocal is not in up_proj's rows, up_proj's
// rows divided without down_proj's columns multiplied (or the other way
// round) and another layer's o_proj are still errors.
func TestFoldedLinear(t *testing.T) {
	layer := awqLayer()
	pub := filepath.Join(t.TempDir(), "published")
	if err := fixture.WriteSharded(pub, layer, 1, nil); err != nil {
		t.Fatal(err)
	}
	all := awqFolds()
	folded := func(keys ...string) []string {
		var out []string
		for _, k := range keys {
			out = append(out, "info quantized_scale_folded "+k)
		}
		return out
	}
	want := func(errs []string, infos ...string) []string {
		out := append(slices.Clone(errs), folded(infos...)...)
		slices.Sort(out)
		return out
	}
	attention := []string{inputNorm, kProj, oProj, qProj, vProj}
	upOnly := foldSpec{rows: upProj, s: all[3].s}
	downOnly := foldSpec{cols: []string{downProj}, s: all[3].s}
	downOther := foldSpec{cols: []string{downProj}, s: awqScales(layerInter, 19)}
	for _, c := range []struct {
		name   string
		folds  []foldSpec
		other  map[string]fixture.Tensor
		want   []string
		reason map[string]string // a quantization_error's message says so
	}{
		{"all four folds", all, nil, want(nil, append(attention, downProj, gateProj, postNorm, upProj)...), nil},
		{"down_proj scaled by other scales than up_proj's rows", append(all[:3:3], upOnly, downOther), nil,
			want([]string{"error quantization_error " + downProj, "error quantization_error " + upProj}, append(attention, gateProj, postNorm)...),
			map[string]string{upProj: downProj + " does not hold the rows' reciprocal in its input columns", downProj: upProj + " does not hold its reciprocal in its output rows"}},
		{"up_proj's rows divided, down_proj unscaled", append(all[:3:3], upOnly), nil,
			want([]string{"error quantization_error " + upProj}, append(attention, gateProj, postNorm)...),
			map[string]string{upProj: downProj + " does not hold the rows' reciprocal"}},
		{"down_proj scaled, up_proj's rows not", append(all[:3:3], downOnly), nil,
			want([]string{"error quantization_error " + downProj}, append(attention, gateProj, postNorm, upProj)...),
			map[string]string{downProj: upProj + " does not hold its reciprocal in its output rows"}},
		{"o_proj another layer's weight", all, map[string]fixture.Tensor{oProj: bf16Weights(oProj, 99, layerHidden, layerHidden)},
			want([]string{"error quantization_error " + oProj, "error quantization_error " + vProj, "error reinitialized " + oProj},
				downProj, gateProj, inputNorm, kProj, postNorm, qProj, upProj), nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := diffPaths(t, pub, export(t, foldLayer(layer, c.folds, c.other), awqLayerConfig), DiffOptions{WeightsOnly: true})
			if got := notable(d.Findings); len(got) != 0 {
				t.Fatalf("structure: %v", d.Findings)
			}
			rep, err := d.CompareValues(context.Background(), ValueOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := notable(rep.Findings); !slices.Equal(got, c.want) {
				t.Errorf("findings %q\nwant %q\n%v", got, c.want, rep.Findings)
			}
			for _, f := range rep.Findings {
				if r, ok := c.reason[f.Key]; ok && f.Code == CodeQuantizationError && !strings.Contains(f.Message, r) {
					t.Errorf("%s: %q does not say %q", f.Key, f.Message, r)
				}
			}
			for _, s := range rep.Tensors {
				if isFolded := slices.Contains(c.want, "info quantized_scale_folded "+s.Key); isFolded != (s.Folded != nil) {
					t.Errorf("%s: folded %+v", s.Key, s.Folded)
				}
			}
			if c.name != "all four folds" {
				return
			}
			byKey := map[string]*FoldedStats{}
			for _, s := range rep.Tensors {
				byKey[s.Key] = s.Folded
			}
			if f := byKey[upProj]; f.Next != downProj || f.Norm != postNorm || !(f.RowFactorMin < 1 && f.RowFactorMax > 1) {
				t.Errorf("up_proj: %+v", f)
			}
			if f := byKey[downProj]; f.Previous != upProj || f.Reciprocal > f.Tolerance {
				t.Errorf("down_proj: %+v", f)
			}
			if f := byKey[postNorm]; !slices.Equal(f.Weights, []string{gateProj, upProj}) {
				t.Errorf("post_attention_layernorm: %+v", f)
			}
			// The unfolded export passes as it is, read once.
			plain := diffPaths(t, pub, export(t, foldLayer(layer, nil, nil), awqLayerConfig), DiffOptions{WeightsOnly: true})
			once, err := plain.CompareValues(context.Background(), ValueOptions{})
			if err != nil || len(once.Findings) != 0 {
				t.Fatalf("unfolded: %v %v", once.Findings, err)
			}
			if rep.BytesRead != 2*once.BytesRead {
				t.Errorf("folded read %d bytes, want twice the %d of one pass", rep.BytesRead, once.BytesRead)
			}
		})
	}
}

// TestFoldedLinearMerge: in partitions, each tensor's verdict is the whole
// run's though the norm, the Linear before or after it are in another.
func TestFoldedLinearMerge(t *testing.T) {
	layer := awqLayer()
	pub := filepath.Join(t.TempDir(), "published")
	if err := fixture.WriteSharded(pub, layer, 1, nil); err != nil {
		t.Fatal(err)
	}
	all := awqFolds()
	for _, c := range []struct {
		name  string
		folds []foldSpec
	}{
		{"all four folds", all},
		{"down_proj scaled by other scales", append(all[:3:3], foldSpec{rows: upProj, s: all[3].s}, foldSpec{cols: []string{downProj}, s: awqScales(layerInter, 19)})},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := export(t, foldLayer(layer, c.folds, nil), awqLayerConfig)
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
			if got := codesOf(whole.Findings)[CodeQuantizedScaleFolded]; got < 7 {
				t.Fatalf("whole run: %v", whole.Findings)
			}
			for _, n := range []int{2, 4} {
				var parts []*Report
				for i := range n {
					parts = append(parts, run(Partition{Index: i, Count: n}))
				}
				merged, err := Merge(mergeInputs(parts), Error)
				if err != nil {
					t.Fatal(err)
				}
				sameResult(t, c.name, merged, whole)
			}
		})
	}
}

func TestFoldedLinearNames(t *testing.T) {
	for name, want := range map[string][2]string{
		vProj:    {oProj, ""},
		oProj:    {"", vProj},
		upProj:   {downProj, ""},
		downProj: {"", upProj},
		"model.layers.3.mlp.experts.7.up_proj.weight":         {"model.layers.3.mlp.experts.7.down_proj.weight", ""},
		"model.layers.3.mlp.experts.7.w3.weight":              {"model.layers.3.mlp.experts.7.w2.weight", ""},
		"model.layers.3.mlp.experts.7.w2.weight":              {"", "model.layers.3.mlp.experts.7.w3.weight"},
		"model.layers.3.block_sparse_moe.experts.7.w3.weight": {"", ""},
		qProj:                              {"", ""},
		gateProj:                           {"", ""},
		"model.layers.0.mlp.up_proj.bias":  {"", ""},
		"model.layers.0.mlp.v_proj.weight": {"", ""},
		"lm_head.weight":                   {"", ""},
	} {
		if got := [2]string{foldedNext(name), foldedPrev(name)}; got != want {
			t.Errorf("%s: next, previous %q, want %q", name, got, want)
		}
	}
}

// TestFitRows: a factor per row is fitted exactly with the columns
// weighted; factors of 1 are unit; a zero weight or a negative factor is
// no scale.
func TestFitRows(t *testing.T) {
	// Row i: weighted p = (1, 2), e = (i+1)·p.
	r := &values.RowStats{PP: []float64{5, 5, 5}, EE: []float64{5, 20, 45}, PE: []float64{5, 10, 15}}
	f := fitRows(r, 15, 0.01, 2)
	if f.bad || !f.explained || f.unit || f.residual > 1e-12 || f.rmin != 1 || f.rmax != 3 {
		t.Errorf("%+v", f)
	}
	if u := fitRows(&values.RowStats{PP: []float64{5, 5}, EE: []float64{5, 5}, PE: []float64{5, 5}}, 10, 0.01, 2); !u.unit || !u.explained {
		t.Errorf("unit rows: %+v", u)
	}
	for _, bad := range []*values.RowStats{
		{PP: []float64{0, 0}, EE: []float64{1, 1}, PE: []float64{0, 0}},
		{PP: []float64{5, 5}, EE: []float64{5, 5}, PE: []float64{5, -5}},
	} {
		if f := fitRows(bad, 10, 0.01, 2); !f.bad {
			t.Errorf("%+v: %+v", bad, f)
		}
	}
	// The second Linear's columns (1, 1/2, 1/3) are the reciprocal.
	second := fitColumns(&values.ColumnStats{PP: []float64{4, 4, 4}, EE: []float64{4, 1, 4.0 / 9}, PE: []float64{4, 2, 4.0 / 3}}, 0.01, 2)
	if rec, tol := linearReciprocal(&f, &second); rec > 1e-12 || tol <= 0 {
		t.Errorf("reciprocal %v, tolerance %v", rec, tol)
	}
	if rec, tol := linearReciprocal(nil, &second); rec <= tol {
		t.Errorf("against rows of 1: reciprocal %v, tolerance %v", rec, tol)
	}
	if w := normFactors(&values.ColumnStats{PP: []float64{4, 0, 1, 1}, EE: []float64{1, 0, 1, 0}, PE: []float64{2, 0, -1, 0}}, 4); !slices.Equal(w, []float64{2, 1, 0, 0}) {
		t.Errorf("norm factors %v", w)
	}
	if w := normFactors(&values.ColumnStats{PP: []float64{1}}, 2); w != nil {
		t.Errorf("norm factors of a norm of another size %v", w)
	}
	if w := normFactors(nil, 2); !slices.Equal(w, []float64{1, 1}) || math.IsNaN(w[0]) {
		t.Errorf("norm factors of an unchanged norm %v", w)
	}
}

// TestFoldedLinearBias: with Qwen2's attention biases, v_proj's bias is
// divided by the scale folded between v_proj and o_proj too: folded; a bias
// divided by other scales is a value_mismatch.
func TestFoldedLinearBias(t *testing.T) {
	layer := append(awqLayer(), bf16Weights("model.layers.0.self_attn.q_proj.bias", 21, layerHidden),
		bf16Weights("model.layers.0.self_attn.k_proj.bias", 22, 32), bf16Weights(vBias, 23, layerHidden))
	pub := filepath.Join(t.TempDir(), "published")
	if err := fixture.WriteSharded(pub, layer, 1, nil); err != nil {
		t.Fatal(err)
	}
	all := awqFolds()
	layerKeys := []string{downProj, gateProj, inputNorm, kProj, oProj, postNorm, qProj, upProj, vProj}
	folded := func(errs ...string) []string {
		out := slices.Clone(errs)
		for _, k := range layerKeys {
			out = append(out, "info quantized_scale_folded "+k)
		}
		slices.Sort(out)
		return out
	}
	for _, c := range []struct {
		name  string
		folds []foldSpec
		want  []string
	}{
		{"bias divided with the rows", all, folded("info quantized_scale_folded " + vBias)},
		{"bias divided by other scales", append(slices.Clone(all), foldSpec{norm: vBias, s: awqScales(layerHidden, 29)}), folded("error value_mismatch " + vBias)},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := diffPaths(t, pub, export(t, foldLayer(layer, c.folds, nil), awqLayerConfig), DiffOptions{WeightsOnly: true})
			rep, err := d.CompareValues(context.Background(), ValueOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := notable(rep.Findings); !slices.Equal(got, c.want) {
				t.Errorf("findings %q\nwant %q\n%v", got, c.want, rep.Findings)
			}
			for _, s := range rep.Tensors {
				if s.Key == vBias && (s.Folded != nil) != (c.name == "bias divided with the rows") || s.Folded != nil && s.Key == vBias && s.Folded.BiasOf != vProj {
					t.Errorf("%s: folded %+v", s.Key, s.Folded)
				}
			}
		})
	}
}
